package vm

import (
	"testing"
	"time"
)

func TestNameLocks(t *testing.T) {
	var l NameLocks
	unlockA := l.Lock("a")
	unlockB := l.Lock("b") // another name does not wait
	acquired := make(chan struct{})
	go func() {
		defer close(acquired)
		l.Lock("a")()
	}()
	// The second holder of "a" is waiting once its reference is counted.
	for start := time.Now(); l.refs("a") != 2; {
		select {
		case <-acquired:
			t.Fatal("a second Lock of the same name did not wait")
		case <-time.After(time.Millisecond):
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the second Lock of a name never came to wait")
		}
	}
	unlockA()
	<-acquired
	unlockB()
	if n := len(l.locks); n != 0 {
		t.Errorf("%d names still kept after every holder left", n)
	}
}

func (l *NameLocks) refs(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.locks[name]; ok {
		return n.refs
	}
	return 0
}
