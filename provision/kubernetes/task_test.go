package kubernetes

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runScript runs the container command here with sh, its task folder,
// secret folder and termination log in a temp dir, and returns the
// command, the task folder and the termination log's path.
func runScript(t *testing.T, setup, run string, env map[string]string) (*exec.Cmd, string, string) {
	t.Helper()
	dir := t.TempDir()
	task, secret, term := filepath.Join(dir, "task"), filepath.Join(dir, "secret"), filepath.Join(dir, "termination-log")
	for _, d := range []string{task, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exports, err := envExports(env)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{filepath.Join(task, KeySetup): setup, filepath.Join(task, KeyRun): run,
		filepath.Join(task, KeyNodeIPs): "10.1.0.1\n10.1.0.2", filepath.Join(secret, KeyEnv): exports}
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", containerScript(task, secret, term))
	cmd.Dir = dir
	return cmd, task, term
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if !errors.As(err, &ee) {
		t.Fatalf("run: %v", err)
	}
	return ee.ExitCode()
}

// start writes the start key the container waits for.
func start(t *testing.T, task string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(task, KeyStart), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContainerScriptRunsSetupThenRunAndNamesThePhase(t *testing.T) {
	for _, tc := range []struct {
		name, setup, run string
		code             int
		phase, out       string
	}{
		{"run fails", `echo "setup $SORTIE_JOB_ID"`, `echo "run $TOKEN $SORTIE_NODE_IPS"; exit 29`, 29, PhaseRun, "setup 7\nrun it's \"x\" 10.1.0.1 10.1.0.2\n"},
		{"setup fails", `echo setup; exit 3`, `echo never`, 3, PhaseSetup, "setup\n"},
		{"no setup", ``, `echo ok`, 0, PhaseRun, "ok\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, task, term := runScript(t, tc.setup, tc.run, map[string]string{"SORTIE_JOB_ID": "7", "TOKEN": `it's "x"`})
			start(t, task)
			out, err := cmd.Output()
			if got := exitCode(t, err); got != tc.code {
				t.Errorf("exit code %d, want %d", got, tc.code)
			}
			if strings.ReplaceAll(string(out), "\n10.1.0.2", " 10.1.0.2") != tc.out {
				t.Errorf("output %q, want %q", out, tc.out)
			}
			msg, _ := os.ReadFile(term)
			if string(msg) != tc.phase {
				t.Errorf("termination message %q, want %q", msg, tc.phase)
			}
		})
	}
}

// TestContainerScriptWaitsForTheStartAndPassesSIGTERMOn: nothing runs
// before the start key; a SIGTERM to the container (the pod deleted) is
// passed on to the phase, whose exit code is the container's.
func TestContainerScriptWaitsForTheStartAndPassesSIGTERMOn(t *testing.T) {
	dir := t.TempDir()
	began, stopped := filepath.Join(dir, "began"), filepath.Join(dir, "stopped")
	run := `trap 'echo term > ` + shellQuote(stopped) + `; exit 7' TERM
echo > ` + shellQuote(began) + `
while :; do sleep 0.05; done`
	cmd, task, term := runScript(t, "", run, nil)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The container polls for the start key every second: wait for one
	// poll to pass without it.
	time.Sleep(1200 * time.Millisecond)
	if _, err := os.Stat(began); err == nil {
		t.Fatal("the run phase began before the task was started")
	}
	start(t, task)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(began); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run phase did not begin after the start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if got := exitCode(t, err); got != 7 {
			t.Errorf("exit code %d after SIGTERM, want the phase's 7", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the container did not end after SIGTERM")
	}
	if b, _ := os.ReadFile(stopped); string(b) != "term\n" {
		t.Errorf("the phase did not hear SIGTERM (%q)", b)
	}
	if b, _ := os.ReadFile(term); string(b) != PhaseRun {
		t.Errorf("termination message %q, want run", b)
	}
}

func TestEnvExportsRefusesBadKeys(t *testing.T) {
	if _, err := envExports(map[string]string{"A-B": "x"}); err == nil || !strings.Contains(err.Error(), "envs.A-B: not a shell variable name") {
		t.Errorf("envExports with A-B: %v", err)
	}
}
