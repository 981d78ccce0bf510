package kubernetes

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
)

// runScript runs the container command here with sh, its task folder,
// secret folder and termination log in a temp dir, and returns the
// command, the task folder and the termination log's path.
func runScript(t *testing.T, setup, run string, env map[string]string) (*exec.Cmd, string, string) {
	t.Helper()
	return runScriptWith(t, setup, run, env, nil)
}

// runScriptWith is runScript with files handed over as StartTask does,
// the work folder in the temp dir too.
func runScriptWith(t *testing.T, setup, run string, env map[string]string, files []provision.File) (*exec.Cmd, string, string) {
	t.Helper()
	dir := t.TempDir()
	task, secret, term := filepath.Join(dir, "task"), filepath.Join(dir, "secret"), filepath.Join(dir, "termination-log")
	for _, d := range []string{task, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exports, err := node.EnvExports(env)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]string{filepath.Join(task, KeySetup): setup, filepath.Join(task, KeyRun): run,
		filepath.Join(task, KeyNodeIPs): "10.1.0.1\n10.1.0.2", filepath.Join(secret, KeyEnv): string(exports)}
	list, data, err := filesData(files)
	if err != nil {
		t.Fatal(err)
	}
	if list != "" {
		body[filepath.Join(task, KeyFiles)] = list
	}
	for k, v := range data {
		body[filepath.Join(task, k)] = string(v)
	}
	for path, body := range body {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", containerScript(task, secret, term, filepath.Join(dir, "work")))
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
	run := `trap 'echo term > ` + node.Quote(stopped) + `; exit 7' TERM
echo > ` + node.Quote(began) + `
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

func TestEnvExportsRefusesBadEnvs(t *testing.T) {
	if _, err := node.EnvExports(map[string]string{"A-B": "x"}); err == nil || !strings.Contains(err.Error(), "envs.A-B: not a shell variable name") {
		t.Errorf("EnvExports with A-B: %v", err)
	}
	if _, err := node.EnvExports(map[string]string{"A": "x\x00y"}); err == nil || !strings.Contains(err.Error(), "envs.A: value holds a NUL byte") {
		t.Errorf("EnvExports with a NUL byte: %v", err)
	}
}

// TestContainerScriptCopiesTheFiles: the task's files land under the work
// folder (relative paths) or where they say (absolute), with their modes,
// and the task runs in the work folder; a file that cannot be written
// fails setup, saying which.
func TestContainerScriptCopiesTheFiles(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "mnt", "data.txt")
	files := []provision.File{
		{Path: "train.py", Mode: 0o644, Data: []byte("print(1)\n")},
		{Path: "bin/go.sh", Mode: 0o755, Data: []byte("#!/bin/sh\necho go\n")},
		{Path: "with space.txt", Mode: 0o600, Data: []byte("x")},
		{Path: abs, Mode: 0o644, Data: []byte("data\n")},
	}
	cmd, task, _ := runScriptWith(t, "", `pwd; cat train.py; ./bin/go.sh; cat "with space.txt"; echo; cat `+node.Quote(abs), nil, files)
	start(t, task)
	out, err := cmd.Output()
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("exit code %d, output %q", code, out)
	}
	want := filepath.Join(filepath.Dir(task), "work") + "\nprint(1)\ngo\nx\ndata\n"
	if string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if info, err := os.Stat(filepath.Join(filepath.Dir(task), "work", "with space.txt")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode of a copied file: %v, %v", info, err)
	}

	// A destination under a file: setup fails and says which.
	blocked := filepath.Join(filepath.Dir(abs), "data.txt", "under")
	cmd, task, term := runScriptWith(t, "", "echo never", nil, []provision.File{{Path: blocked, Mode: 0o644, Data: []byte("x")}})
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	start(t, task)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if code := exitCode(t, err); code != 1 || strings.Contains(string(out), "never") {
		t.Errorf("exit code %d, output %q; want 1 before the run", code, out)
	}
	if !strings.Contains(stderr.String(), "cannot write "+blocked) {
		t.Errorf("stderr %q does not name the file", stderr.String())
	}
	if b, _ := os.ReadFile(term); string(b) != PhaseSetup {
		t.Errorf("termination message %q, want setup", b)
	}
}

func TestFilesDataRefusesWhatAPodCannotTake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []provision.File
		want  string
	}{
		{"too large", []provision.File{{Path: "a", Data: make([]byte, MaxFiles/2+1)}, {Path: "b", Data: make([]byte, MaxFiles/2)}}, "over 512 KiB of files"},
		{"line break", []provision.File{{Path: "a\nb"}}, "line break"},
		{"leaves", []provision.File{{Path: "../x"}}, "leaves the task's folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := filesData(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("filesData: %v, want %q", err, tc.want)
			}
		})
	}
	list, data, err := filesData([]provision.File{{Path: "a b", Mode: 0o755, Data: []byte("x")}, {Path: "/etc/c", Mode: 0o644}})
	if err != nil || list != "755 file.0 a b\n644 file.1 /etc/c\n" || string(data["file.0"]) != "x" || len(data) != 2 {
		t.Errorf("filesData = %q, %v, %v", list, data, err)
	}
}
