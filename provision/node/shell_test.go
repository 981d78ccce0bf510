package node_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sortie/provision"
	"sortie/provision/node"
)

// attachRunner adds Attach to bashRunner: bash in the node directory with
// the caller's streams, as the local provider's runner does it.
type attachRunner struct{ bashRunner }

func (r attachRunner) Attach(ctx context.Context, script string, stdio provision.Stdio) (int, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = r.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// A shell on a node whose task failed runs where the task ran, with the
// task's environment, sees its files, and returns the command's status;
// nothing the task's env file sets (D, W, the argument list) changes where
// it runs or what.
func TestShellRunsWhereTheTaskRanWithItsEnv(t *testing.T) {
	ctx := context.Background()
	r := attachRunner{newNode(t)}
	env := map[string]string{"FOO": "bar baz", "D": "/elsewhere", "W": "/elsewhere", "SORTIE_SHELL_ARGV": "rm -rf /nothing"}
	if err := node.Start(ctx, r, node.StartSpec{Run: "echo failed-here >marker; exit 3", Env: env}); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 3 {
		t.Fatalf("task exit %d, want 3", st.ExitCode)
	}
	var out, errb bytes.Buffer
	code, err := node.Shell(ctx, r, []string{"bash", "-c", `cat marker; echo "$FOO"; pwd; echo "$1"; exit 7`, "x", "it's 'quoted' $HOME"},
		provision.Stdio{Out: &out, Err: &errb})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := filepath.EvalSymlinks(filepath.Join(r.dir, "workdir"))
	want := "failed-here\nbar baz\n" + wd + "\nit's 'quoted' $HOME\n"
	if code != 7 || out.String() != want {
		t.Errorf("exit %d, out %q (stderr %q); want 7 and %q", code, out.String(), errb.String(), want)
	}

	// The node's own HOME, when it has one.
	if err := os.Mkdir(filepath.Join(r.dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code, err := node.Shell(ctx, r, []string{"sh", "-c", `echo "$HOME"`}, provision.Stdio{Out: &out}); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if got, _ := filepath.EvalSymlinks(strings.TrimSpace(out.String())); got != mustEval(t, filepath.Join(r.dir, "home")) {
		t.Errorf("HOME %q, want the node's home %s", out.String(), filepath.Join(r.dir, "home"))
	}

	// A node without a cwd file (a local start in the default working
	// directory writes none) is entered in that directory.
	if err := os.Remove(filepath.Join(r.dir, "cwd")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code, err := node.Shell(ctx, r, []string{"pwd"}, provision.Stdio{Out: &out}); err != nil || code != 0 || out.String() != wd+"\n" {
		t.Errorf("without cwd: exit %d, %v, pwd %q; want %s", code, err, out.String(), wd)
	}

	// Input reaches the command.
	out.Reset()
	if code, err := node.Shell(ctx, r, []string{"cat"}, provision.Stdio{In: strings.NewReader("typed\n"), Out: &out}); err != nil || code != 0 || out.String() != "typed\n" {
		t.Errorf("cat: exit %d, %v, out %q", code, err, out.String())
	}
}

func TestShellOnANodeWithoutATaskSaysSo(t *testing.T) {
	r := attachRunner{newNode(t)}
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code, err := node.Shell(context.Background(), r, []string{"true"}, provision.Stdio{Err: &errb})
	if err != nil || code != 125 || !strings.Contains(errb.String(), "the task never started on this node") {
		t.Errorf("exit %d, %v, stderr %q; want 125 and why", code, err, errb.String())
	}
}

func TestShellNeedsARunnerThatAttaches(t *testing.T) {
	if _, err := node.Shell(context.Background(), newNode(t), []string{"true"}, provision.Stdio{}); err == nil {
		t.Error("a runner that cannot attach ran a shell")
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
