package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Notice is a preemption notice as the agent records it in the notice file
// and reports it: the notice package's Notice, the same fields and JSON.
type Notice struct {
	Kind     string    `json:"kind"`
	Source   string    `json:"source"`
	At       time.Time `json:"at"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// DefaultGrace is how long a notice's SIGTERM is given before SIGKILL when
// the agent is told nothing else (job_recovery.termination_grace).
const DefaultGrace = 30 * time.Second

// Agent runs one task on one node.
type Agent struct {
	// Dir is the node directory, absolute and resolved.
	Dir string
	// Bash is the bash the phases run with.
	Bash string
	// Env is the environment of the phases (DirEnv is added).
	Env []string
	// Watch, when set, listens for preemption notices until ctx ends and
	// calls found for each, with whether it ends the node (cmd/sortie-agent
	// gives it the notice package's watchers, which this package does not
	// link: the controller imports it for Answer and its file names).
	Watch func(ctx context.Context, found func(n Notice, ends bool))
	// Grace is how long the task gets between a notice's SIGTERM and
	// SIGKILL; never later than the notice's deadline. 0 is DefaultGrace.
	Grace time.Duration
	// Now and After are the clock; nil is the real one.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// ProgressAfter is the clock of the progress watcher, which reads the
	// task's progress file every ProgressInterval; nil is the real one.
	ProgressAfter func(time.Duration) <-chan time.Time
	// Ready is called once the agent has recorded its pid (the starter
	// waits for it); nil does nothing.
	Ready func()
	// Reap makes the agent the subreaper of the task's processes (Linux):
	// what the task leaves running when its last phase ends, even outside
	// its process group, is ended then, and the reaped file says none is
	// left. cmd/sortie-agent sets it; an Agent run inside another program
	// (a test) must not, as it would reap that program's children.
	Reap bool
	// Key, when set, is the node's key (KeySize bytes), given by the
	// starter and kept in memory only: the exit code record carries its
	// Tag, which the controller checks, so that a record the task wrote is
	// never taken for the task's exit code.
	Key []byte

	mu       sync.Mutex
	group    int       // the running phase's process group, 0 between phases
	noticed  bool      // a notice that ends the node was heard
	deadline time.Time // that notice's deadline, zero when none
	syncMu   sync.Mutex
	recorded bool // finish wrote the exit code: it writes it once

	progressMu   sync.Mutex
	progress     int64 // the highest progress recorded
	progressSeen bool  // one was recorded
}

// phaseScript is what bash runs for a phase on the node itself, as SkyPilot
// runs a task: an interactive bash (-i) that sources ~/.bashrc, past the
// "not interactive: return" guard most .bashrc files begin with, so that
// what setup adds there (conda, PATH) is seen by run; then the task's env
// and its script, in the same shell, in the working directory. Interactive
// bash ignores SIGTERM, and would carry on with the script's next command
// after a stop; the trap makes it end as a non-interactive one does. Its
// complaint about job control without a terminal goes to the stderr it
// starts with (nothing); fd 3 is the log.
const phaseScript = `exec 2>&3 3>&- 4>&-
set +o history
trap 'exit 143' TERM
if [ -f ~/.bashrc ]; then source ~/.bashrc; fi
cd -- "$1" || exit 1
shift
. "$SORTIE_NODE_DIR/env" || exit 1
source "$0"`

// Run runs the task: claims the node (returning nil at once when another
// agent has), runs setup when there is one and then run, each as a session
// and process group of its own, and records the exit code that ended the
// task. A notice heard meanwhile stops the task (see onNotice).
func (a *Agent) Run(ctx context.Context) error {
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.After == nil {
		a.After = time.After
	}
	if a.Grace <= 0 {
		a.Grace = DefaultGrace
	}
	ok, err := claim(a.Dir)
	if err != nil || !ok {
		return err
	}
	if err := mark(a.Dir, FilePID, os.Getpid()); err != nil {
		return err
	}
	if a.Reap {
		if err := Subreaper(true); err != nil {
			a.Reap = false
			a.logLine(fmt.Sprintf("sortie: the agent cannot adopt the task's orphans (%v); leftovers are ended by the node's teardown", err))
		}
	}
	if a.Ready != nil {
		a.Ready()
	}
	if a.Watch != nil {
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go a.Watch(wctx, a.onNotice)
	}
	err = a.runPhases(ctx)
	if a.Reap && endLeftovers(a.Grace) {
		os.WriteFile(filepath.Join(a.Dir, FileReaped), nil, 0o644)
	}
	return err
}

// runPhases runs setup, when there is one, then run, and records the exit
// code that ended the task.
func (a *Agent) runPhases(ctx context.Context) error {
	w, err := ReadCwd(a.Dir)
	if err != nil {
		return a.finish(PhaseRun, 1, fmt.Sprintf("read the working directory: %v", err))
	}
	// The buckets: downloaded before setup; what changed in a
	// MOUNT_CACHED one uploaded every interval and once more when the task
	// has ended, before its exit code is written.
	buckets, interval := a.buckets()
	if buckets {
		if err := a.sync(ctx, "down"); err != nil {
			return a.finish(PhaseSetup, 1, fmt.Sprintf("download of the buckets failed (%v); the log says why", err))
		}
		stop := make(chan struct{})
		if interval > 0 {
			go a.syncEvery(ctx, interval, stop)
		}
		defer close(stop)
	}
	// The task's progress: read every interval, and once more when the
	// task has ended, before its exit code is written.
	os.Mkdir(filepath.Join(a.Dir, ProgressDir), 0o755)
	progressDone := make(chan struct{})
	go a.watchProgress(ctx, progressDone)
	defer close(progressDone)
	phase, code := PhaseRun, 0
	if exists(filepath.Join(a.Dir, "setup.sh")) {
		if code = a.phase(PhaseSetup, w); code != 0 {
			phase = PhaseSetup
		}
	}
	if code == 0 {
		code = a.phase(PhaseRun, w)
	}
	if buckets {
		a.finalSync(ctx)
	}
	a.recordProgress()
	return a.finish(phase, code, "")
}

// ReadCwd reads the working directory of the task in node directory dir,
// from the cwd file as $(cat cwd) would: trailing newlines dropped.
// Without one, the task runs in the default working directory
// (DefaultWorkdir), which a start on this machine does not write down.
func ReadCwd(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileCwd))
	if errors.Is(err, fs.ErrNotExist) {
		return filepath.Join(dir, DefaultWorkdir), nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// stopping says whether a phase must not begin: a stop was asked, or a
// notice that ends the node was heard.
func (a *Agent) stopping() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.noticed || exists(filepath.Join(a.Dir, FileStop))
}

// phase runs one phase and returns its exit code, 128+N when a signal N
// ended it.
func (a *Agent) phase(name, w string) int {
	// The phase shows in its group's file (pgid.<phase>), written once
	// the phase runs: Answer reads it there.
	if a.stopping() {
		return 143
	}
	logf, err := os.OpenFile(filepath.Join(a.Dir, FileLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 1
	}
	defer logf.Close()
	container := exists(filepath.Join(a.Dir, FileContainer))
	var cmd *exec.Cmd
	if container {
		// In the task's container image (image_id: docker:IMAGE).
		cmd = exec.Command(a.Bash, filepath.Join(a.Dir, FileContainer), a.Dir, w, name)
		cmd.Stderr = logf
	} else {
		cmd = exec.Command(a.Bash, "--norc", "--noprofile", "-i", "-c", phaseScript, filepath.Join(a.Dir, name+".sh"), w)
		cmd.ExtraFiles = []*os.File{logf}
	}
	cmd.Dir = a.Dir
	cmd.Env = append(a.Env[:len(a.Env):len(a.Env)], DirEnv+"="+a.Dir, ProgressEnv+"="+ProgressPath(a.Dir))
	cmd.Stdout = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// In a sandbox, the phase is bubblewrap's command: bubblewrap stays
	// outside, waiting for it, and tells its pid on fd 4. The phase's
	// own session and group is that process's, which a stop or a notice
	// signals; bubblewrap itself is never signalled, so the task's own
	// way of ending (its trap of SIGTERM) gives the code.
	var info *os.File
	if !container {
		sb, err := ReadSandbox(a.Dir)
		if err == nil && sb != nil {
			cmd, info, err = a.sandboxed(sb, cmd, w)
		}
		if err != nil {
			fmt.Fprintf(logf, "sortie: could not start the %s phase in its sandbox: %v\n", name, err)
			return 127
		}
	}
	a.mu.Lock()
	// A notice heard just now: begin nothing.
	if a.noticed {
		a.mu.Unlock()
		if info != nil {
			info.Close()
			cmd.ExtraFiles[1].Close()
		}
		return 143
	}
	pid, wait, err := a.start(cmd)
	if info != nil {
		cmd.ExtraFiles[1].Close()
		if err == nil {
			var got int
			got, err = sandboxPID(info)
			if err != nil {
				// bubblewrap said why on the log, and exits.
				a.mu.Unlock()
				info.Close()
				code := wait()
				fmt.Fprintf(logf, "sortie: could not start the %s phase in its sandbox (bubblewrap exited with %d)\n", name, code)
				return 127
			}
			pid = got
		}
		info.Close()
	}
	if err == nil {
		a.group = pid
	}
	a.mu.Unlock()
	if err != nil {
		fmt.Fprintf(logf, "sortie: could not start the %s phase: %v\n", name, err)
		return 127
	}
	mark(a.Dir, "pgid."+name, pid)
	code := wait()
	a.mu.Lock()
	a.group = 0
	a.mu.Unlock()
	if container {
		rm := exec.Command(a.Bash, filepath.Join(a.Dir, FileContainer), a.Dir, w, name, "rm")
		rm.Dir = a.Dir
		rm.Env = cmd.Env
		if _, wait, err := a.start(rm); err == nil {
			wait()
		}
	}
	return code
}

// sandboxed wraps the phase's cmd in sb: bubblewrap runs it, and the
// returned file reads bubblewrap's info (the write end is cmd's fd 4).
func (a *Agent) sandboxed(sb *Sandbox, cmd *exec.Cmd, w string) (*exec.Cmd, *os.File, error) {
	home := ""
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		return nil, nil, errors.New("the node has no HOME")
	}
	if err := os.MkdirAll(filepath.Join(a.Dir, TmpDir), 0o700); err != nil {
		return nil, nil, err
	}
	args, err := sb.Args(a.Dir, w, home, 4)
	if err != nil {
		return nil, nil, err
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	// bubblewrap's own complaints go to the log; the phase's bash starts
	// with no stderr, as outside (phaseScript).
	args = append(args, "--", "/bin/sh", "-c", `exec "$0" "$@" 2>/dev/null`)
	args = append(args, cmd.Args...)
	out := exec.Command(sb.Program, args...)
	out.Dir, out.Env, out.Stdout, out.Stderr = cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stdout
	out.ExtraFiles = append(cmd.ExtraFiles[:1:1], wr)
	out.SysProcAttr = cmd.SysProcAttr
	return out, r, nil
}

// sandboxPID reads bubblewrap's info: the pid, in this machine's view, of
// the process it started in the sandbox.
func sandboxPID(info *os.File) (int, error) {
	var v struct {
		Pid int `json:"child-pid"`
	}
	if err := json.NewDecoder(info).Decode(&v); err != nil {
		return 0, err
	}
	if v.Pid <= 0 {
		return 0, errors.New("bubblewrap gave no pid")
	}
	return v.Pid, nil
}

// start starts cmd and returns its pid and how to wait for its exit code
// (128+N when signal N ended it). A subreaping agent (Reap) starts every
// child through its reaper, which also reaps the task's orphans as they
// end; otherwise it is cmd.Wait.
func (a *Agent) start(cmd *exec.Cmd) (int, func() int, error) {
	if a.Reap {
		pid, ch, err := startChild(cmd)
		if err != nil {
			return 0, nil, err
		}
		return pid, func() int { return <-ch }, nil
	}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	return cmd.Process.Pid, func() int { return exitCode(cmd.Wait()) }, nil
}

// signal sends sig to child pid of cmd, which start started and which is
// not yet waited for.
func (a *Agent) signal(cmd *exec.Cmd, pid int, sig syscall.Signal) {
	if a.Reap {
		signalChild(pid, sig)
		return
	}
	cmd.Process.Signal(sig)
}

// exitCode is the shell's view of how a process ended.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

// finish records the phase's exit code, durably, and whether a stop
// (or a notice) came before the phase ended ("stop") or not ("-"): a code a
// stop caused is sortie's, but a task that ended before the stop keeps its
// own code even when the stop marker comes later. With a Key the record
// carries its Tag. It is the agent's own record: whatever the task wrote
// in its place is replaced. why, when set, goes to the log first.
func (a *Agent) finish(phase string, code int, why string) error {
	how := "-"
	if a.stopping() {
		how = "stop"
	}
	if why != "" {
		a.logLine("sortie: " + why)
	}
	if a.recorded {
		return nil
	}
	a.recorded = true
	words := []string{phase, strconv.Itoa(code), how}
	if a.Key != nil {
		words = append(words, Tag(a.Key, phase, code, how))
	}
	line := strings.Join(words, " ")
	rec := filepath.Join(a.Dir, RecordDir)
	err := os.Mkdir(rec, 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		err = putDurable(rec, FileExitCode, []byte(line+"\n"))
	}
	if err != nil {
		// No room for the file's bytes (a full disk): an empty file needs
		// none, so its name carries the code. The log says so first: a
		// reader that sees the marker finds the reason there.
		a.logLine(fmt.Sprintf("sortie: could not write the exit code (%s %d) on this node", phase, code))
		name := UnwrittenPrefix + strings.Join(words, ".")
		f, ferr := os.OpenFile(filepath.Join(rec, name), os.O_WRONLY|os.O_CREATE, 0o644)
		if ferr == nil {
			f.Close()
			syncDir(rec)
		}
		if ferr != nil {
			return fmt.Errorf("record exit code %q: %w (and as a marker: %v)", phase+" "+strconv.Itoa(code)+" "+how, err, ferr)
		}
	}
	return nil
}

func (a *Agent) logLine(s string) {
	f, err := os.OpenFile(filepath.Join(a.Dir, FileLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	io.WriteString(f, s+"\n")
	f.Close()
}

// onNotice records a notice and, when it ends the node, stops the task:
// SIGTERM to the running phase's process group now, SIGKILL after the grace
// or at the notice's deadline, whichever comes first, and no phase begins
// after it.
func (a *Agent) onNotice(n Notice, ends bool) {
	if b, err := json.Marshal(n); err == nil {
		if err := putDurable(a.Dir, FileNotice, append(b, '\n')); err != nil {
			a.logLine(fmt.Sprintf("sortie: could not record the notice: %v", err))
		}
	}
	if !ends {
		a.logLine(fmt.Sprintf("sortie: %s notice from %s; the task goes on", n.Kind, n.Source))
		return
	}
	grace := a.Grace
	if !n.Deadline.IsZero() {
		if left := n.Deadline.Sub(a.Now()); left < grace {
			grace = max(left, 0)
		}
	}
	a.mu.Lock()
	a.noticed = true
	a.deadline = n.Deadline
	g := a.group
	if g > 0 {
		syscall.Kill(-g, syscall.SIGTERM)
	}
	a.mu.Unlock()
	a.logLine(fmt.Sprintf("sortie: %s notice from %s (deadline %s): SIGTERM to the task, SIGKILL in %s",
		n.Kind, n.Source, deadlineText(n.Deadline), grace.Round(time.Millisecond)))
	if g <= 0 {
		return
	}
	go func() {
		<-a.After(grace)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.group == g {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	}()
}

func deadlineText(t time.Time) string {
	if t.IsZero() {
		return "none given"
	}
	return t.UTC().Format(time.RFC3339)
}
