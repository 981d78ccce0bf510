package agent

import (
	"os"
	"slices"
	"testing"
	"time"
)

// A child that has ended but is not reaped yet is a leftover whoever's it
// was: its environment, which named its node, is gone with it, and the
// caller must reap it before saying none is left.
func TestAnEndedChildIsALeftoverUntilReaped(t *testing.T) {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(p.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d never ended", p.Pid)
		}
		time.Sleep(time.Millisecond)
	}
	none := func(int) bool { return false }
	if got := leftovers(none); !slices.Contains(got, p.Pid) {
		t.Errorf("leftovers = %v; want the ended child %d, claimed by no node", got, p.Pid)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(none); slices.Contains(got, p.Pid) {
		t.Errorf("leftovers = %v after the child was reaped", got)
	}
}
