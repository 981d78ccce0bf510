package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts a process leading a group of its own with args and env,
// and returns it; the test kills it at the end.
func startGroup(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
	return cmd
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !containsState(b, 'Z')
}

func containsState(stat []byte, s byte) bool {
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == s
		}
	}
	return false
}

// A pid file that names a group of someone else's (its pid reused, as when
// tests run at once) is left alone; a group of the node's is killed.
func TestKillNodeProcessesSparesReusedGroups(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other := startGroup(t, nil, "sleep", "60")
	if err := os.WriteFile(filepath.Join(dir, "pgid.run"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A process with the agent's command line: sortie-agent run DIR.
	agent := startGroup(t, nil, "bash", "-c", `exec -a sortie-agent bash -c "sleep 60; exit 0" run "$0"`, dir)
	if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(agent.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(agent.Process.Pid) + "/cmdline")
		if strings.HasPrefix(string(b), "sortie-agent\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's command line is %q after 5s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	task := startGroup(t, []string{nodeDirEnv + "=" + dir}, "sleep", "60")
	if err := os.WriteFile(filepath.Join(dir, "pgid.setup"), []byte(strconv.Itoa(task.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	KillNodeProcesses(dir)
	deadline := time.Now().Add(5 * time.Second)
	for (alive(agent.Process.Pid) || alive(task.Process.Pid)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(agent.Process.Pid) || alive(task.Process.Pid) {
		t.Error("the node's agent or task outlived KillNodeProcesses")
	}
	if !alive(other.Process.Pid) {
		t.Error("KillNodeProcesses killed a group a stale pid file named, which was not the node's")
	}
}
