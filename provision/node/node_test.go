package node_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/node"
)

// bashRunner is the smallest provision.Runner: bash in a directory of this
// machine. The local provider's runner is tested with the provider.
type bashRunner struct{ dir string }

func (r bashRunner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = filepath.Dir(r.dir) // the node directory may not exist yet
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out, &provision.ExitError{Code: ee.ExitCode(), Stderr: stderr.String()}
	}
	return out, err
}
func (r bashRunner) Dir() string  { return r.dir }
func (r bashRunner) Close() error { return nil }

// newNode returns a runner on a fresh node directory whose processes are
// killed when the test ends.
func newNode(t *testing.T) bashRunner {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node-0")
	t.Cleanup(func() { killMarked(t, dir) })
	return bashRunner{dir: dir}
}

// killMarked kills every process carrying dir as its node directory, with
// its group, until none is left. The recorded groups are not enough: a test
// may end between the agent starting a phase and recording its group.
func killMarked(t *testing.T, dir string) {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	marker := []byte(node.DirEnv + "=" + dir)
	for range 500 {
		found := false
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, marker) }) {
				continue
			}
			found = true
			if pg, err := syscall.Getpgid(pid); err == nil && pg != syscall.Getpgrp() {
				syscall.Kill(-pg, syscall.SIGKILL)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("processes of %s survived SIGKILL", dir)
}

// waitDone polls the node every 10ms until its task has an exit code.
func waitDone(t *testing.T, r provision.Runner) node.Status {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := node.Poll(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.Done {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("task in %s not done after 15s: %+v", r.Dir(), st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFile polls every 10ms until the file exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 10s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readLog(t *testing.T, r provision.Runner) string {
	t.Helper()
	b, err := node.ReadLog(context.Background(), r, 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name      string
		spec      node.StartSpec
		wantPhase string
		wantCode  int
		wantLog   string
	}{
		{"run succeeds", node.StartSpec{Setup: "echo setup", Run: "echo run"}, node.PhaseRun, 0, "setup\nrun\n"},
		{"run fails", node.StartSpec{Run: "echo out; echo err >&2; exit 7"}, node.PhaseRun, 7, "out\nerr\n"},
		{"setup fails and run is skipped", node.StartSpec{Setup: "echo s; exit 3", Run: "echo never"}, node.PhaseSetup, 3, "s\n"},
		{"run killed by a signal", node.StartSpec{Run: "kill -KILL $$"}, node.PhaseRun, 137, ""},
		{"empty run", node.StartSpec{}, node.PhaseRun, 0, ""},
		// A task without run (SkyPilot's setup-only task) succeeds with its setup.
		{"setup only", node.StartSpec{Setup: "echo s"}, node.PhaseRun, 0, "s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newNode(t)
			if err := node.Start(context.Background(), r, tt.spec); err != nil {
				t.Fatal(err)
			}
			st := waitDone(t, r)
			if st.Phase != tt.wantPhase || st.ExitCode != tt.wantCode || !st.Started {
				t.Errorf("status = %+v, want started, phase %s, exit code %d", st, tt.wantPhase, tt.wantCode)
			}
			if got := readLog(t, r); got != tt.wantLog {
				t.Errorf("log = %q, want %q", got, tt.wantLog)
			}
		})
	}
}

func TestEnvIsPassedVerbatim(t *testing.T) {
	env := map[string]string{
		"QUOTES":  `it's "quoted"`,
		"SPACES":  "  two  spaces  ",
		"DOLLAR":  "$HOME $(touch pwned) `touch pwned2` ${X:-y}",
		"NEWLINE": "line1\nline2\n",
		"EMPTY":   "",
		"BACKSL":  `a\b\\c\'`,
	}
	r := newNode(t)
	run := `for k in QUOTES SPACES DOLLAR NEWLINE EMPTY BACKSL; do printf '%s=%s\0' "$k" "${!k}"; done > vals`
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run, Env: env}); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 0 {
		t.Fatalf("status %+v, log %q", st, readLog(t, r))
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "workdir", "vals"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	if diff := cmp.Diff(env, got); diff != "" {
		t.Errorf("env seen by the task (-want +got):\n%s", diff)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(r.dir, "workdir", f)); err == nil {
			t.Errorf("an env value ran as shell code: %s exists", f)
		}
	}
}

func TestEnvKeyMustBeAName(t *testing.T) {
	r := newNode(t)
	for _, k := range []string{"1A", "A-B", "A B", "", "A;touch x"} {
		err := node.Start(context.Background(), r, node.StartSpec{Run: "true", Env: map[string]string{k: "v"}})
		if err == nil || !strings.Contains(err.Error(), "not a shell variable name") {
			t.Errorf("env key %q: err = %v, want a 'not a shell variable name' error", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir, "started")); err == nil {
		t.Error("a rejected Start claimed the node")
	}
}

func TestStartTwiceStartsOnce(t *testing.T) {
	r := newNode(t)
	spec := node.StartSpec{Run: "echo once"}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = node.Start(context.Background(), r, spec)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	waitDone(t, r)
	// A controller restarted after the task finished starts it again.
	if err := node.Start(context.Background(), r, spec); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, r); got != "once\n" {
		t.Errorf("log = %q, want the task to have run exactly once", got)
	}
}

func TestPollBeforeStart(t *testing.T) {
	r := newNode(t)
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(node.Status{}, st); diff != "" {
		t.Errorf("status of a node with no directory (-want +got):\n%s", diff)
	}
	if b, err := node.ReadLog(context.Background(), r, 0); err != nil || len(b) != 0 {
		t.Errorf("ReadLog = %q, %v; want nothing", b, err)
	}
}

func TestReadLogFromOffset(t *testing.T) {
	r := newNode(t)
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "printf abcdef"}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, r)
	for _, tt := range []struct {
		offset int64
		want   string
	}{{0, "abcdef"}, {3, "def"}, {6, ""}, {100, ""}} {
		b, err := node.ReadLog(context.Background(), r, tt.offset)
		if err != nil || string(b) != tt.want {
			t.Errorf("ReadLog(%d) = %q, %v; want %q", tt.offset, b, err, tt.want)
		}
	}
	if _, err := node.ReadLog(context.Background(), r, -1); err == nil {
		t.Error("ReadLog(-1) succeeded")
	}
}

func TestStartedTaskIsDetached(t *testing.T) {
	r := newNode(t)
	// The task reports its session, whether SIGHUP is ignored (bit 0 of the
	// mask) and the workdir it runs in.
	run := `read -r _ _ _ _ _ sid _ </proc/self/stat; echo "sid=$sid"
grep '^SigIgn:' /proc/self/status
pwd`
	wd := filepath.Join(t.TempDir(), " w\\d ")
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run, Workdir: wd}); err != nil {
		t.Fatal(err)
	}
	// Start returns only once the agent recorded its pid and runs.
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Started || !(st.AgentAlive || st.Done) {
		t.Errorf("status right after Start = %+v, want started with a live agent or done", st)
	}
	if st := waitDone(t, r); st.ExitCode != 0 {
		t.Fatalf("status = %+v, want exit code 0", st)
	}
	lines := strings.Split(readLog(t, r), "\n")
	if len(lines) < 3 {
		t.Fatalf("log = %q", lines)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(self[bytes.LastIndexByte(self, ')')+1:]))
	if lines[0] == "sid="+f[3] {
		t.Errorf("task runs in the test's session %s", lines[0])
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(lines[1], "SigIgn:")), 16, 64)
	if err != nil || mask&1 == 0 {
		t.Errorf("task's %q: want SIGHUP ignored", lines[1])
	}
	if lines[2] != wd {
		t.Errorf("task's workdir = %q, want %q", lines[2], wd)
	}
}

// A node that cannot write its exit_code file (a full disk) records the
// code in a marker's name and says so in its log; Poll reads it.
func TestExitCodeThatCannotBeWritten(t *testing.T) {
	r := newNode(t)
	if err := os.MkdirAll(filepath.Join(r.dir, "record", "exit_code.tmp"), 0o755); err != nil {
		t.Fatal(err) // a directory in the way: writing the file fails
	}
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "exit 3"}); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.ExitCode != 3 || st.Phase != node.PhaseRun || !st.Unwritten || st.Stopped {
		t.Errorf("status = %+v, want run 3, unwritten", st)
	}
	if log := readLog(t, r); !strings.Contains(log, "could not write the exit code (run 3)") {
		t.Errorf("log = %q, want it to say the exit code could not be written", log)
	}
}

// A Start whose controller died after claiming the node and before the
// agent began leaves the node not started; the next Start finishes it,
// and the task runs once.
func TestHalfStartIsFinished(t *testing.T) {
	r := newNode(t)
	if err := os.MkdirAll(filepath.Join(r.dir, "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Started {
		t.Fatalf("a node claimed without an agent reads %+v, want not started", st)
	}
	spec := node.StartSpec{Run: "echo once"}
	for range 2 {
		if err := node.Start(context.Background(), r, spec); err != nil {
			t.Fatal(err)
		}
	}
	if st := waitDone(t, r); st.ExitCode != 0 {
		t.Errorf("status = %+v, want exit 0", st)
	}
	if got := readLog(t, r); got != "once\n" {
		t.Errorf("log = %q, want the task to have run exactly once", got)
	}
}

// An agent that could not write its pid or its phase's group (a full disk:
// no room for the bytes) records them in empty files' names: it is seen
// alive while its task runs, never dead without an exit code, and Stop and
// Groups still reach its processes.
func TestPidThatCannotBeWritten(t *testing.T) {
	r := newNode(t)
	for _, name := range []string{"pid.tmp", "pgid.run.tmp"} {
		if err := os.MkdirAll(filepath.Join(r.dir, name), 0o755); err != nil {
			t.Fatal(err) // a directory in the way: writing the file fails
		}
	}
	ctx := context.Background()
	if err := node.Start(ctx, r, node.StartSpec{Run: "sleep 30"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for seen := 0; seen < 5; {
		st, err := node.Poll(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.Done || !st.AgentAlive {
			t.Fatalf("while the task runs: %+v; want the agent alive, no exit code", st)
		}
		if st.Phase == node.PhaseRun {
			seen++
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run phase did not begin within 10s: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if gs := node.Groups(r.dir); len(gs) != 2 || node.AgentPID(r.dir) != gs[0] {
		t.Errorf("groups %v, agent pid %d; want the agent's and the run phase's", gs, node.AgentPID(r.dir))
	}
	if err := node.StopWithin(ctx, r, time.Second); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); !st.Stopped || st.ExitCode != 143 {
		t.Errorf("after Stop: %+v; want stopped with 143", st)
	}
}
