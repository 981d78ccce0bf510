package clocktest

import (
	"runtime"
	"testing"
	"time"
)

// Patience is how long, in real time, BlockUntil and Eventually wait
// before failing a test.
var Patience = 10 * time.Second

// Eventually waits until cond holds and fails t, naming what was waited
// for, when it does not within Patience. It first yields to the other
// goroutines between looks; only when cond depends on something outside
// the process (a child process, a server) does it sleep, a millisecond at
// first and at most 20 ms.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Within(Patience, cond) {
		t.Fatalf("%s: not within %v", what, Patience)
	}
}

// Within says whether cond held within d of real time, looking as
// Eventually does.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		if i < 100 {
			runtime.Gosched()
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
