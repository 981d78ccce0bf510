package agent

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphan starts a shell that leaves script's background command running
// and exits, and returns that command's pid: an orphan, which the kernel
// gives to this process once it is a subreaper.
func orphan(t *testing.T, script string) int {
	t.Helper()
	if err := becomeSubreaper(); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	out, err := exec.Command("sh", "-c", script+" >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	})
	return pid
}

// A child that has ended but is not reaped yet is a leftover whoever's it
// was: its environment, which named its node, is gone with it, and the
// caller must reap it before saying none is left.
func TestAnEndedChildIsALeftoverUntilReaped(t *testing.T) {
	pid := orphan(t, "sleep 0.1") // ends after the shell: then it is this process's to reap
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d never ended here", pid)
		}
		time.Sleep(time.Millisecond)
	}
	none := func(int) bool { return false }
	if got := leftovers(none); !slices.Contains(got, pid) {
		t.Errorf("leftovers = %v; want the ended orphan %d, claimed by no node", got, pid)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(none); slices.Contains(got, pid) {
		t.Errorf("leftovers = %v after the orphan was reaped", got)
	}
}

// What a task leaves running when its shell ends comes to the agent, and
// is a leftover of the node that claims it.
func TestAnOrphanLeftRunningIsALeftover(t *testing.T) {
	pid := orphan(t, "sleep 30")
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(children(), pid) {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d never came to this process; its children: %v", pid, children())
		}
		time.Sleep(time.Millisecond)
	}
	if got := leftovers(func(p int) bool { return p == pid }); !slices.Equal(got, []int{pid}) {
		t.Errorf("leftovers claimed by the orphan's node = %v; want [%d]", got, pid)
	}
	if got := leftovers(func(int) bool { return false }); slices.Contains(got, pid) {
		t.Errorf("leftovers of another node = %v; want no %d (it runs, and is not that node's)", got, pid)
	}
}
