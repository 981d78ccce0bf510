package daemon

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/controller/home"
)

// helperHome, set in a child's environment, makes TestMain run a controller
// of that home (holding its lock, doing nothing) instead of the tests.
const helperHome = "SORTIE_DAEMON_TEST_HOME"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperHome); h != "" {
		err := Run(context.Background(), h, func(ctx context.Context) error { <-ctx.Done(); return nil }, func() {})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startController runs a controller of h in a child process and returns it
// once it holds the lock and has written its pid file.
func startController(t *testing.T, h string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperHome+"="+h)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(10 * time.Second); pidFile(h) != cmd.Process.Pid; {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not start within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

// bystander is a process that is no controller, for a stale pid file to name.
func bystander(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func writePID(t *testing.T, h string, pid int) {
	t.Helper()
	if err := os.WriteFile(home.PID(h), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With its pid file deleted, the controller is still found through its
// lock: status names it (never "starting" forever), stop stops it, and a
// second controller refuses naming it (never pid 0).
func TestControllerWithoutPIDFile(t *testing.T) {
	h := t.TempDir()
	c := startController(t, h)
	if err := os.Remove(home.PID(h)); err != nil {
		t.Fatal(err)
	}
	if got := Running(h); got != c.Process.Pid {
		t.Errorf("Running = %d, want the controller's pid %d", got, c.Process.Pid)
	}
	err := Run(context.Background(), h, func(context.Context) error { return nil }, func() {})
	if err == nil || !strings.Contains(err.Error(), "(pid "+strconv.Itoa(c.Process.Pid)+")") {
		t.Errorf("a second controller: %v; want a refusal naming pid %d", err, c.Process.Pid)
	}
	got, err := Stop(context.Background(), h)
	if err != nil || got != c.Process.Pid {
		t.Fatalf("Stop = %d, %v; want the controller %d stopped", got, err, c.Process.Pid)
	}
	if Running(h) != 0 {
		t.Errorf("Running = %d after Stop, want 0", Running(h))
	}
}

// A stale pid file never makes sortie signal the process it names: with a
// new controller holding the lock, that one is found and stopped; with
// none, nothing is signalled.
func TestStalePIDFileNamesAnotherProcess(t *testing.T) {
	h := t.TempDir()
	c := startController(t, h)
	other := bystander(t)
	writePID(t, h, other.Process.Pid)
	if got := Running(h); got != c.Process.Pid {
		t.Errorf("Running = %d, want the lock holder %d, not the pid file's %d", got, c.Process.Pid, other.Process.Pid)
	}
	got, err := Stop(context.Background(), h)
	if err != nil || got != c.Process.Pid {
		t.Errorf("Stop = %d, %v; want the controller %d stopped", got, err, c.Process.Pid)
	}
	if !alive(other.Process.Pid) {
		t.Fatalf("process %d, named by a stale pid file, was killed", other.Process.Pid)
	}
	// No controller now; the pid file still names the bystander.
	writePID(t, h, other.Process.Pid)
	if got := Running(h); got != 0 {
		t.Errorf("Running with no controller = %d, want 0", got)
	}
	if got, err := Stop(context.Background(), h); got != 0 || err != nil {
		t.Errorf("Stop with no controller = %d, %v; want 0, nil", got, err)
	}
	if !alive(other.Process.Pid) {
		t.Errorf("process %d, named by a stale pid file, was killed", other.Process.Pid)
	}
}

// Where the kernel's lock table cannot be read, the pid file is used only
// while the lock is held, and only for a process that has the lock file
// open.
func TestPIDFileIsCheckedAgainstTheLock(t *testing.T) {
	h := t.TempDir()
	lk, err := lock(h)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(home.Lock(h))
	if err != nil {
		t.Fatal(err)
	}
	if !held(h) {
		t.Error("held = false while this process holds the lock")
	}
	if pid, ok := lockTable(fi); !ok || pid != os.Getpid() {
		t.Errorf("lockTable = %d, %v; want this process, %d", pid, ok, os.Getpid())
	}
	other := bystander(t)
	if !hasOpen(os.Getpid(), fi) || hasOpen(other.Process.Pid, fi) {
		t.Errorf("hasOpen: holder %v, bystander %v; want true, false", hasOpen(os.Getpid(), fi), hasOpen(other.Process.Pid, fi))
	}
	lk.Close()
	if held(h) {
		t.Error("held = true once the lock is released")
	}
	if pid, ok := lockTable(fi); !ok || pid != 0 {
		t.Errorf("lockTable after release = %d, %v; want 0, true", pid, ok)
	}
}
