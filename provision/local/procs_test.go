package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// waitFor polls cond every 10ms for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// launchRunning launches name with n nodes and starts run on each, returning
// once every node's task has created the file "ready" in its workdir.
func launchRunning(t *testing.T, p *Provider, name string, n int, run string) (*provision.Cluster, []provision.Runner) {
	t.Helper()
	ctx := context.Background()
	c, err := p.Launch(ctx, spec(name, pl("local", "local-a"), n))
	if err != nil {
		t.Fatal(err)
	}
	var rs []provision.Runner
	for rank := range c.Nodes {
		r, err := p.Runner(ctx, c, rank)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"SORTIE_NODE_RANK": fmt.Sprint(rank)}
		if err := node.Start(ctx, r, node.StartSpec{Run: run, Env: env}); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		waitFor(t, "task ready in "+r.Dir(), func() bool { return exists(filepath.Join(r.Dir(), "workdir", "ready")) })
		// The agent records the run group just after starting it.
		waitFor(t, "run group recorded in "+r.Dir(), func() bool { return exists(filepath.Join(r.Dir(), "pgid.run")) })
	}
	return c, rs
}

func poll(t *testing.T, r provision.Runner) node.Status {
	t.Helper()
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func anyGroupAlive(groups []int) bool {
	for _, g := range groups {
		if groupAlive(g) {
			return true
		}
	}
	return false
}

// TestHelperController is not a test: it is the controller process of
// TestWrapperSurvivesTheController, which kills it with SIGKILL.
func TestHelperController(t *testing.T) {
	home := os.Getenv("SORTIE_TEST_CONTROLLER_HOME")
	if home == "" {
		t.Skip("runs only as a child of TestWrapperSurvivesTheController")
	}
	ctx := context.Background()
	p := New(Config{Home: home})
	c, err := p.Launch(ctx, spec("sortie-7-0-1", pl("local", "local-a"), 1))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Runner(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := `echo started; touch ready; while [ ! -e release ]; do sleep 0.01; done; echo released; exit 5`
	if err := node.Start(ctx, r, node.StartSpec{Run: run}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("controller: started")
	select {}
}

func TestWrapperSurvivesTheController(t *testing.T) {
	p := newProvider(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperController$", "-test.v")
	cmd.Env = append(os.Environ(), "SORTIE_TEST_CONTROLLER_HOME="+p.home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() && !strings.Contains(sc.Text(), "controller: started") {
		seen = append(seen, sc.Text())
	}
	if sc.Err() != nil || len(seen) > 0 && !strings.Contains(sc.Text(), "controller: started") {
		t.Fatalf("the controller process never started the task: %v %q", sc.Err(), seen)
	}
	// kill -9 of the controller, then a new one over the same home.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	c := mustStatus(t, New(Config{Home: p.home}), "sortie-7-0-1")
	if c.Nodes[0].State != provision.NodeRunning {
		t.Fatalf("node is %s after the controller died", c.Nodes[0].State)
	}
	r, err := New(Config{Home: p.home}).Runner(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "task ready", func() bool { return exists(filepath.Join(r.Dir(), "workdir", "ready")) })
	if st := poll(t, r); !st.Started || st.Done || !st.AgentAlive || st.Phase != node.PhaseRun {
		t.Fatalf("status after the controller died = %+v, want the task running", st)
	}
	if err := os.WriteFile(filepath.Join(r.Dir(), "workdir", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "task done", func() bool { return poll(t, r).Done })
	if st := poll(t, r); st.Phase != node.PhaseRun || st.ExitCode != 5 {
		t.Errorf("status = %+v, want run 5", st)
	}
	if log, _ := node.ReadLog(context.Background(), r, 0); string(log) != "started\nreleased\n" {
		t.Errorf("log = %q", log)
	}
}

func TestStopKillsTheProcessGroup(t *testing.T) {
	p := newProvider(t)
	_, rs := launchRunning(t, p, "sortie-8-0-1", 1, "sleep 300 & sleep 300 & touch ready; wait")
	groups := node.Groups(rs[0].Dir())
	if len(groups) != 2 || !anyGroupAlive(groups[1:]) {
		t.Fatalf("recorded groups %v, want the agent's and a live run group", groups)
	}
	if err := node.Stop(context.Background(), rs[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "exit code after Stop", func() bool { return poll(t, rs[0]).Done })
	if st := poll(t, rs[0]); st.Phase != node.PhaseRun || st.ExitCode != 143 {
		t.Errorf("status after Stop = %+v, want run 143", st)
	}
	waitFor(t, "agent gone", func() bool { return !anyGroupAlive(groups) })
	if procs, _ := nodeProcs([]string{rs[0].Dir()}); len(procs) != 0 {
		t.Errorf("processes left after Stop: %v", procs)
	}
}

func TestPreemptKillsOnlyThatNode(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	name := "sortie-9-0-1"
	_, rs := launchRunning(t, p, name, 2, "sleep 300 & touch ready; wait")
	g0, g1 := node.Groups(rs[0].Dir()), node.Groups(rs[1].Dir())
	if err := New(Config{Home: p.home}).Preempt(ctx, name, 1); err != nil {
		t.Fatal(err)
	}
	if anyGroupAlive(g1) {
		t.Errorf("node 1 groups %v still alive after Preempt", g1)
	}
	if procs, _ := nodeProcs([]string{rs[1].Dir()}); len(procs) != 0 {
		t.Errorf("node 1 processes left after Preempt: %v", procs)
	}
	if st := poll(t, rs[1]); st.Done || st.AgentAlive {
		t.Errorf("preempted node status = %+v, want no exit code and no agent", st)
	}
	if len(g0) != 2 || !groupAlive(g0[0]) || !groupAlive(g0[1]) {
		t.Errorf("node 0 groups %v died with node 1", g0)
	}
	if st := poll(t, rs[0]); st.Done || !st.AgentAlive {
		t.Errorf("node 0 status = %+v, want running", st)
	}
	c := mustStatus(t, p, name)
	if c.Nodes[0].State != provision.NodeRunning || c.Nodes[1].State != provision.NodePreempted || c.Nodes[1].Reason != PreemptReason {
		t.Errorf("nodes = %+v, want node 0 running and node 1 preempted", c.Nodes)
	}
	if err := p.Preempt(ctx, name, 2); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Preempt of rank 2: %v, want out of range", err)
	}
	if err := p.Preempt(ctx, "sortie-404-0-1", 0); err == nil {
		t.Error("Preempt of an unknown cluster succeeded")
	}

	// Terminate ends the rest.
	if err := p.Terminate(ctx, name); err != nil {
		t.Fatal(err)
	}
	if anyGroupAlive(g0) {
		t.Errorf("node 0 groups %v alive after Terminate", g0)
	}
	if exists(p.clusterDir(name)) {
		t.Error("cluster directory left after Terminate")
	}
}

func TestNodesHaveIndependentProcessGroups(t *testing.T) {
	p := newProvider(t)
	_, rs := launchRunning(t, p, "sortie-10-0-1", 2, `echo "rank $SORTIE_NODE_RANK"; touch ready; sleep 300`)
	g0, g1 := node.Groups(rs[0].Dir()), node.Groups(rs[1].Dir())
	seen := map[int]bool{}
	for _, g := range append(append([]int{}, g0...), g1...) {
		if seen[g] {
			t.Fatalf("groups %v and %v share %d", g0, g1, g)
		}
		seen[g] = true
	}
	if err := node.StopWithin(context.Background(), rs[0], time.Second); err != nil {
		t.Fatal(err)
	}
	if anyGroupAlive(g0[1:]) {
		t.Errorf("node 0 run group alive after Stop")
	}
	if st := poll(t, rs[1]); st.Done || !st.AgentAlive || !anyGroupAlive(g1) {
		t.Errorf("node 1 after node 0 stopped: %+v, want still running", st)
	}
	for rank, r := range rs {
		log, err := node.ReadLog(context.Background(), r, 0)
		if want := fmt.Sprintf("rank %d\n", rank); err != nil || string(log) != want {
			t.Errorf("node %d log = %q, %v; want %q", rank, log, err, want)
		}
	}
}

func TestTerminateKillsProcessesThatLeftTheGroup(t *testing.T) {
	p := newProvider(t)
	p.grace = 100 * time.Millisecond
	name := "sortie-11-0-1"
	// The task starts a daemon in a session of its own, out of reach of Stop.
	_, rs := launchRunning(t, p, name, 1, `setsid sleep 300 & echo $! > daemon; trap "" TERM; touch ready; sleep 300`)
	waitFor(t, "daemon pid", func() bool { return exists(filepath.Join(rs[0].Dir(), "workdir", "daemon")) })
	procs, err := nodeProcs([]string{rs[0].Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) < 2 {
		t.Fatalf("node processes = %v, want the task and its daemon", procs)
	}
	if err := p.Terminate(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	// A killed process that has let go of its memory, which is how Terminate
	// sees it gone, may take a moment more to become a zombie on a busy
	// machine; one that survived would sleep on for minutes.
	for _, pr := range procs {
		deadline := time.Now().Add(2 * time.Second)
		for {
			state, _, ok := procStat(pr.pid)
			if !ok || state == "Z" || state == "X" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %d (state %s) alive 2s after Terminate", pr.pid, state)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if m, _ := p.Status(context.Background(), []string{name}); len(m) != 0 {
		t.Errorf("Status after Terminate = %v, want absent", m)
	}
}

func TestRunnerExec(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	c, err := p.Launch(ctx, spec("sortie-12-0-1", pl("local", "local-a"), 1))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Runner(ctx, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Exec(ctx, "pwd", nil)
	if err != nil || strings.TrimSpace(string(out)) != r.Dir() {
		t.Errorf("pwd = %q, %v; want the node directory %s", out, err, r.Dir())
	}
	_, err = r.Exec(ctx, "kill -TERM $$", nil)
	if ee, ok := err.(*provision.ExitError); !ok || ee.Code != 143 {
		t.Errorf("Exec killed by SIGTERM: %v, want exit code 143", err)
	}
	// Cancelling ends the command and its children at once.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Exec(cctx, "sleep 300 & sleep 300; wait", nil); err == nil {
		t.Error("a cancelled Exec succeeded")
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("cancelled Exec returned after %v", d)
	}
	if _, err := p.Runner(ctx, c, 1); err == nil {
		t.Error("Runner for rank 1 of a one-node cluster succeeded")
	}
}

// subdirRunner runs in a directory below the node's, as the controller does
// for each attempt it restarts on the same cluster.
type subdirRunner struct {
	provision.Runner
	dir string
}

func (r subdirRunner) Dir() string { return r.dir }

func TestPreemptAndTerminateReachTasksInSubdirectories(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	name := "sortie-13-0-1"
	c, err := p.Launch(ctx, spec(name, pl("local", "local-a"), 2))
	if err != nil {
		t.Fatal(err)
	}
	var rs []provision.Runner
	for rank := range c.Nodes {
		r, err := p.Runner(ctx, c, rank)
		if err != nil {
			t.Fatal(err)
		}
		sub := subdirRunner{Runner: r, dir: r.Dir() + "/attempt-2"}
		if err := node.Start(ctx, sub, node.StartSpec{Run: "touch ready; sleep 300"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "run group recorded", func() bool { return exists(filepath.Join(sub.dir, "pgid.run")) })
		rs = append(rs, sub)
	}
	g0, g1 := node.Groups(rs[0].Dir()), node.Groups(rs[1].Dir())
	if err := p.Preempt(ctx, name, 0); err != nil {
		t.Fatal(err)
	}
	if anyGroupAlive(g0) {
		t.Errorf("node 0 groups %v alive after Preempt", g0)
	}
	if st := poll(t, rs[0]); st.Done {
		t.Errorf("preempted node recorded an exit code: %+v", st)
	}
	if !anyGroupAlive(g1) {
		t.Errorf("node 1 groups %v died with node 0", g1)
	}
	if err := p.Terminate(ctx, name); err != nil {
		t.Fatal(err)
	}
	if anyGroupAlive(g1) {
		t.Errorf("node 1 groups %v alive after Terminate", g1)
	}
}

// Every local node has a HOME of its own under its directory: a setup that
// appends to ~/.bashrc changes that node's, which its run sees, and never
// the home of whoever runs sortie (this test process's, a temporary one).
func TestEachNodeHasAHomeOfItsOwn(t *testing.T) {
	realHome := os.Getenv("HOME")
	p := newProvider(t)
	ctx := context.Background()
	c, err := p.Launch(ctx, spec("sortie-12-0-1", pl("local", "local-a"), 2))
	if err != nil {
		t.Fatal(err)
	}
	var rs []provision.Runner
	for rank := range c.Nodes {
		r, err := p.Runner(ctx, c, rank)
		if err != nil {
			t.Fatal(err)
		}
		r = node.ForAttempt(r, 1)
		spec := node.StartSpec{
			Setup: `echo "export FROM_SETUP=yes-$SORTIE_NODE_RANK" >>~/.bashrc`,
			Run:   `echo "$HOME $FROM_SETUP"`,
			Env:   map[string]string{"SORTIE_NODE_RANK": fmt.Sprint(rank)},
		}
		if err := node.Start(ctx, r, spec); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	homes := map[string]bool{}
	for rank, r := range rs {
		waitFor(t, "task done in "+r.Dir(), func() bool { return poll(t, r).Done })
		if st := poll(t, r); st.ExitCode != 0 {
			t.Fatalf("node %d: %+v", rank, st)
		}
		log, err := node.ReadLog(ctx, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(log))
		if len(f) != 2 || f[1] != fmt.Sprintf("yes-%d", rank) {
			t.Fatalf("node %d log %q, want its HOME and what its setup put in ~/.bashrc", rank, log)
		}
		nodeDir := filepath.Dir(r.Dir())
		if f[0] != filepath.Join(nodeDir, "home") {
			t.Errorf("node %d HOME = %s, want %s/home", rank, f[0], nodeDir)
		}
		homes[f[0]] = true
	}
	if len(homes) != 2 {
		t.Errorf("homes %v, want one per node", homes)
	}
	if _, err := os.Stat(filepath.Join(realHome, ".bashrc")); err == nil {
		t.Errorf("%s/.bashrc exists: a node wrote into the home of the process running sortie", realHome)
	}
}

func TestTheAgentEndsWhatTheTaskLeftBehind(t *testing.T) {
	// On this machine itself: a sandboxed task's pids are its own
	// namespace's, and what it leaves ends with its sandbox.
	p := New(Config{Home: t.TempDir(), Sandbox: SandboxOff})
	t.Cleanup(func() { terminateAll(t, p) })
	name := "sortie-12-0-1"
	// One leftover in a session of its own, one a daemon's double fork
	// made an orphan: neither is in the run phase's process group.
	_, rs := launchRunning(t, p, name, 1, `setsid sh -c 'echo $$ > left1; exec sleep 300' &
( sh -c 'echo $$ > left2; exec sleep 300' & )
while [ ! -s left1 ] || [ ! -s left2 ]; do sleep 0.01; done
touch ready`)
	d := rs[0].Dir()
	waitFor(t, "exit code", func() bool { return poll(t, rs[0]).Done })
	waitFor(t, "the agent's reaped mark", func() bool { return agent.Reaped(d) })
	for _, f := range []string{"left1", "left2"} {
		b, err := os.ReadFile(filepath.Join(d, "workdir", f))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		// Reaped by the agent, so not even a zombie is left.
		if state, _, ok := procStat(pid); ok {
			t.Errorf("%s (pid %d, state %s) still there after the agent said none is left", f, pid, state)
		}
	}
	if st := poll(t, rs[0]); st.ExitCode != 0 {
		t.Errorf("status = %+v, want run 0", st)
	}
	// Nothing is left, and the node says so: Terminate needs no scan of
	// the machine's processes.
	scans := 0
	scanProcs = func(dirs []string) ([]proc, error) { scans++; return nodeProcs(dirs) }
	t.Cleanup(func() { scanProcs = nodeProcs })
	if err := p.Terminate(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if scans != 0 {
		t.Errorf("Terminate scanned the processes %d times; want none for a node whose agent reaped its task", scans)
	}
}

func TestTerminateScansWhileTheAgentRuns(t *testing.T) {
	p := newProvider(t)
	p.grace = 100 * time.Millisecond
	name := "sortie-13-0-1"
	_, rs := launchRunning(t, p, name, 1, `touch ready; sleep 300`)
	scans := 0
	scanProcs = func(dirs []string) ([]proc, error) { scans++; return nodeProcs(dirs) }
	t.Cleanup(func() { scanProcs = nodeProcs })
	groups := node.Groups(rs[0].Dir())
	if err := p.Terminate(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if scans == 0 {
		t.Error("Terminate did not look for the processes of a node whose task runs")
	}
	waitFor(t, "the node's groups gone", func() bool { return !anyGroupAlive(groups) })
}
