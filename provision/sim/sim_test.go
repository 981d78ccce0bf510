package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

func newClock() *clocktest.Clock { return clocktest.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) }

func newSim(t *testing.T, cfg Config) (*Provider, *clocktest.Clock) {
	t.Helper()
	clk := newClock()
	cfg.Now, cfg.Sleep = clk.Now, clk.SkipErr
	return New(cfg), clk
}

var east = schema.Placement{Cloud: CloudName, Region: "sim-east", Zone: "sim-east-a"}

// launch launches the cluster of job's task attempt with n nodes.
func launch(t *testing.T, p *Provider, job int64, attempt, n int) *provision.Cluster {
	t.Helper()
	name := provision.ClusterName(job, 0, attempt)
	c, err := p.Launch(context.Background(), provision.ClusterSpec{Name: name, Placement: east, NumNodes: n,
		Tags: map[string]string{provision.TagJob: fmt.Sprint(job), provision.TagTask: "0", provision.TagAttempt: fmt.Sprint(attempt)}})
	if err != nil {
		t.Fatalf("Launch %s: %v", name, err)
	}
	return c
}

// attemptDir is a runner in a directory of the attempt's own, as the
// controller makes them.
type attemptDir struct {
	provision.Runner
	attempt int
}

func (r attemptDir) Dir() string { return fmt.Sprintf("%s/attempt-%d", r.Runner.Dir(), r.attempt) }

func runnerFor(t *testing.T, p *Provider, c *provision.Cluster, rank, attempt int) provision.Runner {
	t.Helper()
	r, err := p.Runner(context.Background(), c, rank)
	if err != nil {
		t.Fatal(err)
	}
	return attemptDir{r, attempt}
}

func start(t *testing.T, r provision.Runner, job int64, attempt int) {
	t.Helper()
	err := node.Start(context.Background(), r, node.StartSpec{Run: "python train.py", Env: map[string]string{
		"SORTIE_JOB_ID": fmt.Sprint(job), "SORTIE_TASK_ID": fmt.Sprintf("sortie-%d-0", job), "SORTIE_ATTEMPT": fmt.Sprint(attempt)}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func poll(t *testing.T, r provision.Runner) node.Status {
	t.Helper()
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return st
}

func TestTaskRunsForRunTimeAndExitsWithItsRule(t *testing.T) {
	cfg := Config{RunTime: time.Minute, ExitCodes: []ExitRule{{Code: 29, Share: 1, Attempt: 1}}}
	p, clk := newSim(t, cfg)
	c := launch(t, p, 7, 1, 1)
	r := runnerFor(t, p, c, 0, 1)
	if st := poll(t, r); st.Started {
		t.Fatalf("before Start: %+v", st)
	}
	if err := node.Upload(context.Background(), r, t.TempDir(), "workdir"); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	start(t, r, 7, 1)
	if st := poll(t, r); !st.Started || st.Done || !st.AgentAlive || st.Phase != node.PhaseRun {
		t.Fatalf("after Start: %+v, want running", st)
	}
	clk.Advance(59 * time.Second)
	start(t, r, 7, 1) // idempotent: does not restart the clock
	clk.Advance(time.Second)
	st := poll(t, r)
	if !st.Done || st.ExitCode != 29 || st.AgentAlive {
		t.Fatalf("after RunTime: %+v, want done with 29", st)
	}
	log, err := node.ReadLog(context.Background(), r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "job 7 task 0 attempt 1") || !strings.HasSuffix(string(log), "sim: exit 29\n") {
		t.Errorf("log = %q", log)
	}
	rest, err := node.ReadLog(context.Background(), r, 5)
	if err != nil || string(rest) != string(log[5:]) {
		t.Errorf("ReadLog from 5 = %q, %v; want %q", rest, err, log[5:])
	}

	// The second attempt restarts on the same cluster, in its own directory.
	r2 := runnerFor(t, p, c, 0, 2)
	start(t, r2, 7, 2)
	clk.Advance(time.Minute)
	if st := poll(t, r2); !st.Done || st.ExitCode != 0 {
		t.Errorf("attempt 2: %+v, want exit 0", st)
	}
}

func TestStop(t *testing.T) {
	p, clk := newSim(t, Config{RunTime: time.Hour})
	c := launch(t, p, 8, 1, 2)
	r0, r1 := runnerFor(t, p, c, 0, 1), runnerFor(t, p, c, 1, 1)
	start(t, r0, 8, 1)
	clk.Advance(time.Minute)
	if err := node.Stop(context.Background(), r0); err != nil {
		t.Fatal(err)
	}
	if st := poll(t, r0); !st.Done || st.ExitCode != 143 || !st.Stopped {
		t.Errorf("stopped task: %+v, want exit 143, stopped", st)
	}
	// Stopped before it started: the task never runs.
	if err := node.Stop(context.Background(), r1); err != nil {
		t.Fatal(err)
	}
	start(t, r1, 8, 1)
	if st := poll(t, r1); !st.Started || !st.Done || st.ExitCode != 143 || !st.Stopped {
		t.Errorf("task stopped before start: %+v, want started, stopped and done with 143", st)
	}
	// Stopped after it ended: the code is the task's, and the stop shows.
	c2 := launch(t, p, 8, 2, 1)
	r2 := runnerFor(t, p, c2, 0, 2)
	start(t, r2, 8, 2)
	clk.Advance(2 * time.Hour)
	if err := node.Stop(context.Background(), r2); err != nil {
		t.Fatal(err)
	}
	if st := poll(t, r2); !st.Done || st.ExitCode != 0 || st.Stopped || !st.StopAsked {
		t.Errorf("task stopped after it ended: %+v, want exit 0, its own code, the stop asked", st)
	}
}

func TestOtherCommandsFail(t *testing.T) {
	p, _ := newSim(t, Config{})
	c := launch(t, p, 9, 1, 1)
	r := runnerFor(t, p, c, 0, 1)
	_, err := r.Exec(context.Background(), "echo hello", nil)
	var ee *provision.ExitError
	if !errors.As(err, &ee) || ee.Code != 127 || !strings.Contains(ee.Stderr, "hollow nodes run no commands") {
		t.Errorf("Exec echo: %v, want exit 127 saying hollow nodes run no commands", err)
	}
}

func TestBootDelay(t *testing.T) {
	p, clk := newSim(t, Config{BootDelay: 30 * time.Second})
	t0 := clk.Now()
	c := launch(t, p, 10, 1, 1)
	if got := clk.Now().Sub(t0); got != 30*time.Second {
		t.Errorf("Launch took %s, want the boot delay 30s", got)
	}
	if c.Nodes[0].State != provision.NodeRunning {
		t.Errorf("node after Launch: %s, want running", c.Nodes[0].State)
	}
	// A Launch whose context ends during boot leaves nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spec := provision.ClusterSpec{Name: "sortie-11-0-1", Placement: east, NumNodes: 1}
	if _, err := p.Launch(ctx, spec); err == nil {
		t.Fatal("Launch with an ended context: no error")
	}
	if m, _ := p.Status(context.Background(), []string{spec.Name}); m[spec.Name] != nil {
		t.Errorf("a failed launch left %s", describeCluster(m[spec.Name]))
	}
}

func describeCluster(c *provision.Cluster) string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, fmt.Sprintf("%s %s", n.InstanceID, n.State))
	}
	return c.Name + " [" + strings.Join(s, ", ") + "]"
}

func TestPreemptionWhileTheFirstTaskRuns(t *testing.T) {
	p, clk := newSim(t, Config{RunTime: 100 * time.Second, PreemptRate: 1, PreemptAttempts: 1})
	c := launch(t, p, 12, 1, 1)
	r := runnerFor(t, p, c, 0, 1)
	clk.Advance(time.Hour) // not armed before the task starts
	if m, _ := p.Status(context.Background(), []string{c.Name}); m[c.Name].Nodes[0].State != provision.NodeRunning {
		t.Fatalf("before start: %s", describeCluster(m[c.Name]))
	}
	start(t, r, 12, 1)
	clk.Advance(60 * time.Second) // the latest point: 10% + 50% of RunTime
	m, _ := p.Status(context.Background(), []string{c.Name})
	if n := m[c.Name].Nodes[0]; n.State != provision.NodePreempted || n.Reason != PreemptReason {
		t.Fatalf("after 60%% of RunTime: %s, want preempted", describeCluster(m[c.Name]))
	}
	if _, err := node.Poll(context.Background(), r); err == nil {
		t.Error("Poll of a preempted node succeeded; a preempted VM cannot be reached")
	}
	// PreemptAttempts 1: the next attempt's cluster is left alone.
	c2 := launch(t, p, 12, 2, 1)
	start(t, runnerFor(t, p, c2, 0, 2), 12, 2)
	clk.Advance(time.Minute)
	if m, _ := p.Status(context.Background(), []string{c2.Name}); m[c2.Name].Nodes[0].State != provision.NodeRunning {
		t.Errorf("attempt 2's cluster: %s, want running", describeCluster(m[c2.Name]))
	}
}

func TestCapacityPerZone(t *testing.T) {
	p, _ := newSim(t, Config{CapacityPerZone: 3})
	launch(t, p, 20, 1, 2)
	launch(t, p, 21, 1, 1)
	_, err := p.Launch(context.Background(), provision.ClusterSpec{Name: "sortie-22-0-1", Placement: east, NumNodes: 1})
	if provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("launch into a full zone: %v, want a capacity error", err)
	}
	other := schema.Placement{Cloud: CloudName, Region: "sim-east", Zone: "sim-east-b"}
	if _, err := p.Launch(context.Background(), provision.ClusterSpec{Name: "sortie-22-0-1", Placement: other, NumNodes: 1}); err != nil {
		t.Fatalf("launch into another zone: %v", err)
	}
	if err := p.Terminate(context.Background(), "sortie-20-0-1"); err != nil {
		t.Fatal(err)
	}
	launch(t, p, 23, 1, 2) // the terminated cluster's nodes are free again
}

func TestExitSharesAreDeterministic(t *testing.T) {
	cfg := Config{Seed: 1, ExitCodes: []ExitRule{{Code: 29, Share: 0.1, Attempt: 1}, {Code: 3, Share: 0.05}}}
	counts := map[int]int{}
	for job := int64(1); job <= 10000; job++ {
		code := cfg.ExitCode(job, 0, 1)
		counts[code]++
		if again := cfg.ExitCode(job, 0, 1); again != code {
			t.Fatalf("job %d: exit %d then %d for the same attempt", job, code, again)
		}
		if code == 29 && cfg.ExitCode(job, 0, 2) == 29 {
			t.Fatalf("job %d exits 29 on attempt 2; the rule is for attempt 1", job)
		}
	}
	if counts[29] < 900 || counts[29] > 1100 {
		t.Errorf("%d of 10000 exit 29, want about 1000", counts[29])
	}
	// Rule 2 picks 5% of the jobs rule 1 left.
	if counts[3] < 380 || counts[3] > 520 {
		t.Errorf("%d of 10000 exit 3, want about 450", counts[3])
	}
	// Exit codes and preemptions are chosen independently.
	cfg.PreemptRate = 0.1
	both := 0
	for job := int64(1); job <= 10000; job++ {
		if cfg.ExitCode(job, 0, 1) == 29 && cfg.Preempts(fmt.Sprintf("sortie-%d-0-1", job), 1) {
			both++
		}
	}
	if both < 60 || both > 140 {
		t.Errorf("%d of 10000 jobs both exit 29 and are preempted, want about 100 (1%%)", both)
	}
	other := cfg
	other.Seed = 2
	same := 0
	for job := int64(1); job <= 1000; job++ {
		if (cfg.ExitCode(job, 0, 1) == 29) == (other.ExitCode(job, 0, 1) == 29) {
			same++
		}
	}
	if same == 1000 {
		t.Error("seeds 1 and 2 pick the same jobs")
	}
}

func TestDecisionLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.log")
	p, clk := newSim(t, Config{RunTime: time.Minute, DecisionLog: path,
		ExitCodes: []ExitRule{{Code: 29, Share: 1, Attempt: 1}}, PreemptRate: 1, PreemptAttempts: 1})
	// Job 30 exits 29 on its first attempt: its Start was on a cluster for
	// attempt 2 of another job, so no preemption is planned on it.
	c := launch(t, p, 30, 2, 1)
	r := runnerFor(t, p, c, 0, 1)
	start(t, r, 30, 1)
	clk.Advance(time.Minute)
	poll(t, r) // the controller sees the exit
	clk.Advance(40 * time.Millisecond)
	poll(t, r) // seen once only
	clk.Advance(10 * time.Millisecond)
	start(t, runnerFor(t, p, c, 0, 2), 30, 2) // restart on the same cluster

	// Job 31 is preempted; the controller launches attempt 2 elsewhere.
	c31 := launch(t, p, 31, 1, 1)
	start(t, runnerFor(t, p, c31, 0, 1), 31, 1)
	clk.Advance(time.Minute)
	p.Status(context.Background(), []string{c31.Name})
	clk.Advance(20 * time.Millisecond)
	launch(t, p, 31, 2, 1)

	got, err := ReadDecisions(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d decisions, want 2: %+v", len(got), got)
	}
	if d := got[0]; d.Job != 30 || d.Ended != 1 || d.Next != 2 || d.Latency() != 50*time.Millisecond {
		t.Errorf("decision 1 = %+v latency %s, want job 30 1->2 in 50ms", d, d.Latency())
	}
	if d := got[1]; d.Job != 31 || d.Ended != 1 || d.Next != 2 || d.Latency() != 20*time.Millisecond {
		t.Errorf("decision 2 = %+v latency %s, want job 31 1->2 in 20ms", d, d.Latency())
	}
}

func TestStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim", "state.json")
	clk := newClock()
	cfg := Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr, SaveEvery: time.Hour}
	p, err := Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := launch(t, p, 40, 1, 1)
	start(t, runnerFor(t, p, c, 0, 1), 40, 1)
	// A second opener in the meantime only reads.
	ro, err := Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ro.SetCapacity(east, 0)
	ro.Close()
	if err := p.Close(); err != nil { // SaveEvery is an hour: Close saves
		t.Fatal(err)
	}

	p2, err := Open(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	m, _ := p2.Status(context.Background(), []string{c.Name})
	if m[c.Name] == nil || m[c.Name].Nodes[0].InstanceID != c.Nodes[0].InstanceID {
		t.Fatalf("reopened: %v, want %s with instance %s", m[c.Name], c.Name, c.Nodes[0].InstanceID)
	}
	r := runnerFor(t, p2, m[c.Name], 0, 1)
	if st := poll(t, r); !st.Started || st.Done {
		t.Errorf("reopened task: %+v, want started, running", st)
	}
	clk.Advance(time.Minute)
	if st := poll(t, r); !st.Done {
		t.Errorf("reopened task after RunTime: %+v, want done", st)
	}
	// The read-only opener's capacity change was never written.
	launch(t, p2, 41, 1, 1)
	// New instance ids continue the saved sequence.
	if m2, _ := p2.Status(context.Background(), []string{"sortie-41-0-1"}); m2["sortie-41-0-1"].Nodes[0].InstanceID == c.Nodes[0].InstanceID {
		t.Error("a relaunch reused an instance id")
	}
}

func TestBackgroundSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	clk := newClock()
	p, err := Open(path, Config{Now: clk.Now, Sleep: clk.SkipErr, SaveEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := launch(t, p, 50, 1, 1)
	p.store.inflight.Wait()
	if _, err := os.Stat(path); err == nil {
		t.Fatal("saved within SaveEvery of the last save")
	}
	clk.Advance(time.Minute)
	if _, err := p.Status(context.Background(), []string{c.Name}); err != nil {
		t.Fatal(err)
	}
	p.store.inflight.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no save after SaveEvery: %v", err)
	}
	if !strings.Contains(string(b), c.Nodes[0].InstanceID) {
		t.Errorf("the saved state lacks %s: %s", c.Nodes[0].InstanceID, b)
	}
}

// A task's container image and git workdir mean nothing to hollow nodes:
// the checks and the clone are accepted, and the task runs as any other.
func TestContainerAndGitWorkdirAreAccepted(t *testing.T) {
	p, _ := newSim(t, Config{})
	c := launch(t, p, 8, 1, 1)
	r := runnerFor(t, p, c, 0, 1)
	ctx := context.Background()
	engine, err := node.ContainerEngine(ctx, r, false)
	if err != nil || engine == "" {
		t.Fatalf("ContainerEngine on a hollow node = %q, %v; want an engine", engine, err)
	}
	if err := node.Clone(ctx, r, "https://github.com/example/repo.git", "main", "workdir"); err != nil {
		t.Fatalf("Clone on a hollow node: %v", err)
	}
	err = node.Start(ctx, r, node.StartSpec{Run: "train", Container: &node.Container{Engine: engine, Image: "ubuntu"}})
	if err != nil {
		t.Fatalf("Start with a container: %v", err)
	}
	if st, err := node.Poll(ctx, r); err != nil || !st.Started {
		t.Errorf("after Start: %+v, %v; want started", st, err)
	}
}

func TestStartsCountedAndSavedAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim", "state.json")
	clk := newClock()
	// SaveEvery zero: every change is written before the call returns,
	// as a crash test needs of a cloud that outlives the controller.
	p, err := Open(path, Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr})
	if err != nil {
		t.Fatal(err)
	}
	c := launch(t, p, 60, 1, 2)
	start(t, runnerFor(t, p, c, 1, 1), 60, 1)
	start(t, runnerFor(t, p, c, 1, 1), 60, 1) // asked again: already started
	st, err := ReadState(path)                // no Close: saved already
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Clusters) != 1 || st.Clusters[0] != c.Name {
		t.Errorf("clusters %v, want [%s]", st.Clusters, c.Name)
	}
	if len(st.Starts) != 1 || st.Starts[StartKey(60, 0, 1, 1)] != 1 {
		t.Errorf("starts %v, want one of 60/0/1/1", st.Starts)
	}
	if err := p.Terminate(context.Background(), c.Name); err != nil {
		t.Fatal(err)
	}
	st, _ = ReadState(path)
	if len(st.Clusters) != 0 || st.Starts[StartKey(60, 0, 1, 1)] != 1 {
		t.Errorf("after teardown: clusters %v starts %v; want none up, the start kept", st.Clusters, st.Starts)
	}
	p.Close()
	p2, err := Open(path, Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr})
	if err != nil {
		t.Fatal(err)
	}
	c2 := launch(t, p2, 60, 2, 1)
	start(t, runnerFor(t, p2, c2, 0, 2), 60, 2)
	p2.Close()
	if st, _ = ReadState(path); st.Starts[StartKey(60, 0, 1, 1)] != 1 || st.Starts[StartKey(60, 0, 2, 0)] != 1 {
		t.Errorf("reopened: starts %v, want both kept", st.Starts)
	}
}

// A task's SIM_RUN_TIME and SIM_EXIT_CODE envs override the provider's
// run time and exit rules for that task alone.
func TestTaskEnvsSetItsRunTimeAndExitCode(t *testing.T) {
	p, clk := newSim(t, Config{RunTime: time.Hour})
	c := launch(t, p, 8, 1, 1)
	r := runnerFor(t, p, c, 0, 1)
	err := node.Start(context.Background(), r, node.StartSpec{Run: "x", Env: map[string]string{
		"SORTIE_JOB_ID": "8", "SORTIE_TASK_ID": "sortie-8-0", "SORTIE_ATTEMPT": "1", EnvRunTime: "2s", EnvExitCode: "29"}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if st := poll(t, r); st.Done {
		t.Fatalf("after 1s of a 2s task: %+v, want running", st)
	}
	clk.Advance(time.Second)
	if st := poll(t, r); !st.Done || st.ExitCode != 29 {
		t.Errorf("after 2s: %+v, want done with 29", st)
	}
	other := runnerFor(t, p, launch(t, p, 9, 1, 1), 0, 1)
	start(t, other, 9, 1)
	clk.Advance(time.Minute)
	if st := poll(t, other); st.Done {
		t.Errorf("a task without the envs ended after a minute of an hour's run time: %+v", st)
	}
}

// SIM_PROGRESS makes each attempt report more progress than the one
// before, tagged with the node's key as an agent's record is.
func TestTaskEnvProgress(t *testing.T) {
	p, _ := newSim(t, Config{RunTime: time.Hour})
	c := launch(t, p, 8, 1, 1)
	r := runnerFor(t, p, c, 0, 3)
	err := node.Start(context.Background(), r, node.StartSpec{Run: "x", Env: map[string]string{
		"SORTIE_JOB_ID": "8", "SORTIE_TASK_ID": "sortie-8-0", "SORTIE_ATTEMPT": "3", EnvProgress: "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := poll(t, r); st.Progress == nil || *st.Progress != 300 {
		t.Errorf("attempt 3 of SIM_PROGRESS 100: progress %v, want 300", st.Progress)
	}
	other := runnerFor(t, p, launch(t, p, 9, 1, 1), 0, 1)
	start(t, other, 9, 1)
	if st := poll(t, other); st.Progress != nil {
		t.Errorf("a task without SIM_PROGRESS reports progress %d", *st.Progress)
	}
}

// SIM_EXIT_ZONE makes SIM_EXIT_CODE a failure of one zone: the task exits
// with it there and 0 elsewhere.
func TestTaskExitZone(t *testing.T) {
	p, clk := newSim(t, Config{})
	env := func(job int64) map[string]string {
		return map[string]string{"SORTIE_JOB_ID": fmt.Sprint(job), "SORTIE_TASK_ID": fmt.Sprintf("sortie-%d-0", job), "SORTIE_ATTEMPT": "1",
			EnvExitCode: "3", EnvExitZone: east.Zone}
	}
	in := runnerFor(t, p, launch(t, p, 10, 1, 1), 0, 1)
	if err := node.Start(context.Background(), in, node.StartSpec{Run: "x", Env: env(10)}); err != nil {
		t.Fatal(err)
	}
	c, err := p.Launch(context.Background(), provision.ClusterSpec{Name: provision.ClusterName(11, 0, 1), NumNodes: 1,
		Placement: schema.Placement{Cloud: east.Cloud, Region: "sim-west", Zone: "sim-west-a"},
		Tags:      map[string]string{provision.TagJob: "11", provision.TagTask: "0", provision.TagAttempt: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	out := runnerFor(t, p, c, 0, 1)
	if err := node.Start(context.Background(), out, node.StartSpec{Run: "x", Env: env(11)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if st := poll(t, in); !st.Done || st.ExitCode != 3 {
		t.Errorf("in %s: %+v, want exit 3", east.Zone, st)
	}
	if st := poll(t, out); !st.Done || st.ExitCode != 0 {
		t.Errorf("in sim-west-a: %+v, want exit 0", st)
	}
}
