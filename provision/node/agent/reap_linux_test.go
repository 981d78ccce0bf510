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
	if err := Subreaper(true); err != nil {
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

// What a task leaves running when its shell ends comes to the agent, and
// is a leftover until it has ended and been reaped.
func TestAnOrphanLeftRunningIsALeftoverUntilReaped(t *testing.T) {
	pid := orphan(t, "sleep 30")
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(Children(), pid) {
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d never came to this process; its children: %v", pid, Children())
		}
		time.Sleep(time.Millisecond)
	}
	if got := leftovers(); !slices.Contains(got, pid) {
		t.Errorf("leftovers = %v; want the orphan %d among them", got, pid)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	// Ended but not reaped, it is still a child, and still a leftover.
	if got := leftovers(); !slices.Contains(got, pid) {
		t.Errorf("leftovers = %v before the orphan was reaped; want %d among them", got, pid)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(); slices.Contains(got, pid) {
		t.Errorf("leftovers = %v after the orphan was reaped", got)
	}
}
