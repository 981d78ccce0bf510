package agent

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/provision/node/agenttest"
	"sortie/provision/node/notice"
	"sortie/strategy/clocktest"
)

func TestMain(m *testing.M) { os.Exit(agenttest.Main(m)) }

// node makes a node directory holding what Start writes: run.sh, setup.sh
// when setup is not empty, an empty env and cwd.
func node(t *testing.T, setup, run string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(d, "workdir")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"run.sh": run, "env": "export K='v'\n", "cwd": w}
	if setup != "" {
		files["setup.sh"] = setup
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func newAgent(t *testing.T, d string) *Agent {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	return &Agent{Dir: d, Bash: bash, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// killGroups kills what a test's task may have left, by its recorded groups.
func killGroups(t *testing.T, d string) {
	t.Cleanup(func() {
		for _, f := range []string{"pgid.setup", "pgid.run"} {
			if g := ReadPID(filepath.Join(d, f)); g > 0 {
				syscall.Kill(-g, syscall.SIGKILL)
			}
		}
	})
}

func TestRunWritesTheExitCodeOnceDurably(t *testing.T) {
	d := node(t, "echo setup; exit 0", "echo run $K; exit 3")
	a := newAgent(t, d)
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "run 3 -\n" {
		t.Errorf("exit_code = %q, want %q", got, "run 3 -\n")
	}
	if got := read(t, d+"/log"); got != "setup\nrun v\n" {
		t.Errorf("log = %q", got)
	}
	if _, err := os.Stat(d + "/record/exit_code.tmp"); err == nil {
		t.Error("exit_code.tmp left behind")
	}
	// A second finish (a second agent, a repeated end) keeps the first code.
	if err := a.finish(PhaseRun, 9, ""); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "run 3 -\n" {
		t.Errorf("exit_code after a second finish = %q, want the first kept", got)
	}
	// A second agent on the same node begins nothing.
	os.Remove(d + "/record/exit_code")
	if err := newAgent(t, d).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d + "/record/exit_code"); err == nil {
		t.Error("a second agent ran the task again")
	}
}

func TestPutDurableReplacesWhole(t *testing.T) {
	d := t.TempDir()
	for _, content := range []string{"first, longer content\n", "second\n"} {
		if err := putDurable(d, "f", []byte(content)); err != nil {
			t.Fatal(err)
		}
		if got := read(t, d+"/f"); got != content {
			t.Errorf("f = %q, want %q", got, content)
		}
	}
	// A directory in the way of the temporary file: the write fails and
	// the old content stays.
	if err := os.Mkdir(d+"/f.tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := putDurable(d, "f", []byte("third\n")); err == nil {
		t.Error("putDurable succeeded with its temporary file blocked")
	}
	if got := read(t, d+"/f"); got != "second\n" {
		t.Errorf("f after a failed write = %q, want the old content", got)
	}
}

func TestSetupFailureEndsTheTask(t *testing.T) {
	d := node(t, "exit 4", "echo ran")
	if err := newAgent(t, d).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "setup 4 -\n" {
		t.Errorf("exit_code = %q", got)
	}
	if got := read(t, d+"/log"); strings.Contains(got, "ran") {
		t.Errorf("run ran after setup failed: %q", got)
	}
}

// Each phase runs in a session and process group of its own, not the
// agent's, recorded in pgid.<phase>.
func TestPhasesRunInGroupsOfTheirOwn(t *testing.T) {
	ids := `read -r _ _ _ _ pgid sid _ </proc/self/stat; echo "$pgid $sid"`
	d := node(t, ids, ids)
	if err := newAgent(t, d).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(read(t, d+"/log")), "\n")
	if len(lines) != 2 {
		t.Fatalf("log = %q", lines)
	}
	self := os.Getpid()
	mine, _ := syscall.Getpgid(self)
	for i, phase := range []string{PhaseSetup, PhaseRun} {
		f := strings.Fields(lines[i])
		if len(f) != 2 {
			t.Fatalf("log line %q", lines[i])
		}
		// The task's process is its phase's bash (the script is sourced):
		// the group and session it leads.
		want := strconv.Itoa(ReadPID(filepath.Join(d, "pgid."+phase)))
		if f[0] != want || f[1] != want || f[0] == strconv.Itoa(mine) {
			t.Errorf("%s ran in group %s session %s; want both %s (recorded), not the agent's %d", phase, f[0], f[1], want, mine)
		}
	}
}

// The phases' bash sources ~/.bashrc past the usual "not interactive:
// return" guard, so what setup appends there is seen by run, aliases too.
func TestBashrcIsSourcedAndSetupEditsReachRun(t *testing.T) {
	home := t.TempDir()
	guard := "case $- in *i*) ;; *) return;; esac\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(guard+"export FROM_RC=rc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := node(t, `echo "export FROM_SETUP=setup" >>~/.bashrc; echo "alias hello='echo aliased'" >>~/.bashrc`,
		`echo "$FROM_RC $FROM_SETUP $K $PWD"; hello`)
	a := newAgent(t, d)
	a.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "rc setup v " + d + "/workdir\naliased\n"
	if got := read(t, d+"/log"); got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if got := read(t, d+"/record/exit_code"); got != "run 0 -\n" {
		t.Errorf("exit_code = %q", got)
	}
}

// newClock is the agent's clock in tests: every wait, one of 0 too, lasts
// until the test moves it, so that the test sees what SIGTERM did before
// SIGKILL comes.
func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)).HoldOverdue()
}

// firstWait waits until the agent waits on clock, and returns how long.
func firstWait(t *testing.T, clock *clocktest.Clock) time.Duration {
	t.Helper()
	clock.BlockUntilAsked(t, 1)
	return clock.Waits()[0]
}

// waitFor waits for cond in real time: the task is a real process.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	clocktest.Eventually(t, what, cond)
}

// A notice that ends the node is recorded, sends SIGTERM to the task's
// group, and SIGKILL when the grace is over, which is the notice's
// deadline when that comes first.
func TestNoticeStopsTheTask(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // after the clock's now; 0 is none
		grace    time.Duration
		wantWait time.Duration
	}{
		{"grace first", 2 * time.Minute, 30 * time.Second, 30 * time.Second},
		{"deadline first", 10 * time.Second, 30 * time.Second, 10 * time.Second},
		{"no deadline", 0, 7 * time.Second, 7 * time.Second},
		{"deadline passed", -time.Second, 30 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The task hears SIGTERM, writes its checkpoint and then
			// lingers: only SIGKILL ends it.
			d := node(t, "", `trap 'echo checkpoint >"$SORTIE_NODE_DIR/marker"' TERM; : >"$SORTIE_NODE_DIR/trapped"; while :; do sleep 0.05; done`)
			killGroups(t, d)
			clock := newClock()
			a := newAgent(t, d)
			a.Grace, a.Now, a.After = tc.grace, clock.Now, clock.After
			done := make(chan error, 1)
			go func() { done <- a.Run(context.Background()) }()
			waitFor(t, "the task's trap", func() bool { _, err := os.Stat(d + "/trapped"); return err == nil })
			n := notice.Notice{Kind: notice.KindPreempted, Source: notice.SourceLocal, At: clock.Now()}
			if tc.deadline != 0 {
				n.Deadline = clock.Now().Add(tc.deadline)
			}
			a.onNotice(Notice(n), n.Ends())
			got := firstWait(t, clock)
			if got != tc.wantWait {
				t.Errorf("SIGKILL after %s, want %s", got, tc.wantWait)
			}
			waitFor(t, "the task's checkpoint", func() bool { _, err := os.Stat(d + "/marker"); return err == nil })
			select {
			case <-done:
				t.Fatal("the task ended on SIGTERM; it traps it")
			default:
			}
			clock.Advance(got)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := read(t, d+"/record/exit_code"); got != "run 137 stop\n" {
				t.Errorf("exit_code = %q, want the SIGKILL's, stopped", got)
			}
			var rec notice.Notice
			if err := json.Unmarshal([]byte(read(t, d+"/notice")), &rec); err != nil || rec.Kind != n.Kind || !rec.Deadline.Equal(n.Deadline) {
				t.Errorf("notice file: %+v, %v; want %+v", rec, err, n)
			}
			if log := read(t, d+"/log"); !strings.Contains(log, "preempted notice from local") {
				t.Errorf("log = %q, want it to say why the task was stopped", log)
			}
		})
	}
}

// A notice during setup keeps run from beginning; a rebalance
// recommendation ends nothing.
func TestNoticeDuringSetupSkipsRun(t *testing.T) {
	d := node(t, `while :; do sleep 0.05; done`, `echo run began`)
	killGroups(t, d)
	clock := newClock()
	a := newAgent(t, d)
	a.Now, a.After = clock.Now, clock.After
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	waitFor(t, "the setup phase's group", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.group > 0
	})
	rebalance := notice.Notice{Kind: notice.KindRebalance, Source: notice.SourceAWS, At: clock.Now()}
	a.onNotice(Notice(rebalance), rebalance.Ends())
	if clocktest.Within(50*time.Millisecond, func() bool { return len(clock.Waits()) > 0 }) {
		t.Fatalf("a rebalance recommendation scheduled a SIGKILL in %s", clock.Waits())
	}
	spot := notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: clock.Now(), Deadline: clock.Now().Add(2 * time.Minute)}
	a.onNotice(Notice(spot), spot.Ends())
	clock.BlockUntilAsked(t, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "setup 143 stop\n" {
		t.Errorf("exit_code = %q, want setup ended by SIGTERM", got)
	}
	if log := read(t, d+"/log"); strings.Contains(log, "run began") {
		t.Errorf("run began after the notice: %q", log)
	}
	out, err := Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `notice={"kind":"spot-interruption"`) {
		t.Errorf("answer %q, want the spot interruption notice", out)
	}
}

// A kill -9 of the agent leaves no exit code: its answer says the agent is
// lost, never a code the task did not exit with.
func TestAgentKilledIsLost(t *testing.T) {
	prog, err := agenttest.Build()
	if err != nil {
		t.Fatal(err)
	}
	d := node(t, "", "sleep 30")
	killGroups(t, d)
	cmd := exec.Command(prog, "run", d)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run phase", func() bool { return ReadPID(d+"/pgid.run") > 0 })
	out, err := Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "alive=1\n") || strings.Contains(string(out), "lost=1") {
		t.Fatalf("answer while the agent runs: %q", out)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	out, err = Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "started=1\nphase=run\nlost=1\n" {
		t.Errorf("answer after kill -9 of the agent: %q, want started, in run, lost, no exit code", out)
	}
}

// Liveness knows the agent by its command line: a pid reused by another
// program, a zombie, or garbage in the pid file is no agent.
func TestAgentAliveWantsTheAgentOfThisNode(t *testing.T) {
	d := t.TempDir()
	// Processes whose argv[0] and arguments are given, as the agent's.
	sh := func(arg0 string, args ...string) int {
		cmd := exec.Command("bash", append([]string{"-c", "sleep 30; exit 0", "x"}, args...)...)
		cmd.Args[0] = arg0
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Start may return before the kernel has set the new command line.
		waitFor(t, "the command line of "+arg0, func() bool {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
			return strings.HasPrefix(string(b), arg0+"\x00")
		})
		return cmd.Process.Pid
	}
	zombie := func() int {
		cmd := exec.Command("bash", "-c", "exit 0", "x", "run", d)
		cmd.Args[0] = Program
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Wait() })
		pid := cmd.Process.Pid
		waitFor(t, "a zombie", func() bool {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			return strings.Contains(string(b), ") Z ")
		})
		return pid
	}
	for _, tc := range []struct {
		name string
		pid  int
		want bool
	}{
		{"the agent of d", sh("/opt/x/sortie-agent", "run", d), true},
		{"the agent of another node", sh("sortie-agent", "run", d+"x"), false},
		{"another program with d", sh("bash", "run", d), false},
		{"no such process", 999999999, false},
		{"a zombie", zombie(), false},
	} {
		if got := AgentAlive(d, tc.pid); got != tc.want {
			t.Errorf("%s: AgentAlive = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, content := range []string{"x\n", "0\n", "-1\n", "1\n", ""} {
		if err := os.WriteFile(d+"/pid", []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if p := RecordedPID(d); p != 0 {
			t.Errorf("pid file %q read as %d, want none", content, p)
		}
	}
}

// An agent that writes its exit code and exits between Answer's two looks
// is seen alive, or with its code, never lost without one.
func TestAnswerSeesAnAgentEndingMidAnswerWithItsCode(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", "read -r x", "x", d)
	cmd.Args[0] = Program
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Start may return before the kernel has set the child's new command
	// line, by which the agent is known.
	for deadline := time.Now().Add(10 * time.Second); !AgentAlive(d, cmd.Process.Pid); {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in agent's command line is not the agent's within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	os.WriteFile(d+"/pid", []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	defer func() { afterAliveCheck = func() {} }()
	afterAliveCheck = func() {
		os.Mkdir(d+"/record", 0o755)
		os.WriteFile(d+"/record/exit_code", []byte("run 7 -\n"), 0o644)
		in.Close()
		cmd.Wait()
	}
	out, err := Answer(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "alive=1\nstarted=1\nexit=run 7 -\n" {
		t.Errorf("answer = %q, want alive with its code", out)
	}
}

// Run hands its Watch the callback that stops the task: a notice the
// watcher hears reaches the task's group.
func TestRunWatchesForNotices(t *testing.T) {
	d := node(t, "", `: >"$SORTIE_NODE_DIR/trapped"; while :; do sleep 0.05; done`)
	killGroups(t, d)
	clock := newClock()
	a := newAgent(t, d)
	a.Now, a.After = clock.Now, clock.After
	a.Watch = func(ctx context.Context, found func(Notice, bool)) {
		for {
			if _, err := os.Stat(d + "/trapped"); err == nil {
				found(Notice{Kind: notice.KindPreempted, Source: notice.SourceGCE, At: clock.Now()}, true)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	clock.BlockUntilAsked(t, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := read(t, d+"/record/exit_code"); got != "run 143 stop\n" {
		t.Errorf("exit_code = %q, want the notice's SIGTERM, stopped", got)
	}
}

// NotDumpable leaves the process not dumpable (prctl PR_GET_DUMPABLE says
// 0), so that a process of the same user can neither trace it nor read
// its memory.
func TestNotDumpable(t *testing.T) {
	if err := NotDumpable(); err != nil {
		t.Skipf("not on this system: %v", err)
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 1, 0)
	const prGetDumpable = 3
	if got, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0); errno != 0 || got != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d (errno %v), want 0", got, errno)
	}
}

// ReadKey takes one line of hex of KeySize bytes and reads nothing past it.
func TestReadKey(t *testing.T) {
	key := strings.Repeat("ab", KeySize)
	r := strings.NewReader(key + "\nrest")
	got, err := ReadKey(r)
	if err != nil || len(got) != KeySize || got[0] != 0xab {
		t.Fatalf("ReadKey = %x, %v", got, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "rest" {
		t.Errorf("left %q, want %q", rest, "rest")
	}
	for _, bad := range []string{"", "\n", "zz\n", strings.Repeat("ab", KeySize-1) + "\n"} {
		if _, err := ReadKey(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadKey(%q): no error", bad)
		}
	}
	if !CheckTag([]byte(key), PhaseRun, 3, "-", Tag([]byte(key), PhaseRun, 3, "-")) || CheckTag([]byte(key), PhaseRun, 0, "-", Tag([]byte(key), PhaseRun, 3, "-")) {
		t.Error("CheckTag takes a tag of another code, or not its own")
	}
}
