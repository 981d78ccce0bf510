package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"sortie/provision"
	"sortie/provision/node/agent"
)

// runner runs commands on a local node: bash in the node's directory.
// sandbox, when set, says how the task's phases are confined
// (node.Sandboxer); the runner's own commands (the start, a poll) are
// sortie's and run outside.
type runner struct {
	dir     string
	sandbox func() (*agent.Sandbox, error)
}

// Sandbox is the node's sandbox, nil when its tasks run on this machine.
func (r *runner) Sandbox() (*agent.Sandbox, error) {
	if r.sandbox == nil {
		return nil, nil
	}
	return r.sandbox()
}

// homeDir is the node's own HOME, under its directory, as a VM has its
// user's: what a task does to ~ (setup appending to ~/.bashrc) stays on
// the node, never in the home of whoever runs sortie.
func (r *runner) homeDir() string { return filepath.Join(r.dir, homeName) }

// homeName is the directory of a node's directory that is its HOME.
const homeName = "home"

// Exec runs script with bash -c in the node directory. The command gets a
// process group of its own so that cancelling ctx ends all of it; what it
// detaches on purpose (the task agent) leaves that group and lives on.

func (r *runner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	env, err := r.env()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = r.dir
	cmd.Env = env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A background child that keeps stdout open must not hold Exec forever.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("run bash in %s: %w", r.dir, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return stdout.Bytes(), &provision.ExitError{Code: code, Stderr: stderr.String()}
	}
	if err != nil {
		return stdout.Bytes(), fmt.Errorf("run bash in %s: %w", r.dir, err)
	}
	return stdout.Bytes(), nil
}

// Dir is the node's directory.
func (r *runner) Dir() string { return r.dir }

// Close releases nothing: a local runner holds no connection.
func (r *runner) Close() error { return nil }

// env is the node's environment, its HOME made when missing.
func (r *runner) env() ([]string, error) {
	home := r.homeDir()
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("make the home of local node %s: %w", r.dir, err)
	}
	return nodeEnv(home), nil
}

// nodeEnv is what a process on a local node starts with: the basics of a
// login, not the controller's environment, and home as HOME. Like a cloud
// VM, a local node sees only what the task is given (its envs, its
// secrets, SORTIE_*), so a credential or a secret in the environment of
// whoever started the controller never reaches a task that did not ask for
// it.
func nodeEnv(home string) []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home}
	for _, k := range []string{"USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if p := os.Getenv("PATH"); p != "" {
		env[0] = "PATH=" + p
	}
	return env
}

// Attach runs script with bash in the node directory, its input and
// output the caller's: for `jobs ssh` on a local node, whose terminal, when
// stdio's files are one, is the user's own. It starts from a login's
// environment, as the task did (nodeEnv).
func (r *runner) Attach(ctx context.Context, script string, stdio provision.Stdio) (int, error) {
	env, err := r.env()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = r.dir
	cmd.Env = env
	if stdio.Term != "" {
		cmd.Env = append(cmd.Env, "TERM="+stdio.Term)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("run bash in %s: %w", r.dir, err)
	}
	return 0, nil
}
