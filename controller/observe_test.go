package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// fakeCloud is a provider whose node states the test sets; its nodes
// cannot be reached, which the controller must survive.
type fakeCloud struct {
	clusters   map[string]*provision.Cluster
	terminated []string
}

func (f *fakeCloud) Name() string { return "fake" }
func (f *fakeCloud) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "fake", Region: "r", Zone: "r-a"}}, nil
}
func (f *fakeCloud) Launch(_ context.Context, s provision.ClusterSpec) (*provision.Cluster, error) {
	cl := &provision.Cluster{Name: s.Name, Placement: s.Placement, Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}}}
	f.clusters[s.Name] = cl
	return cl, nil
}
func (f *fakeCloud) Status(_ context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := map[string]*provision.Cluster{}
	for _, n := range names {
		if cl, ok := f.clusters[n]; ok {
			out[n] = cl
		}
	}
	return out, nil
}
func (f *fakeCloud) Terminate(_ context.Context, name string) error {
	f.terminated = append(f.terminated, name)
	return nil
}
func (f *fakeCloud) List(context.Context) ([]*provision.Cluster, error) {
	var out []*provision.Cluster
	for _, cl := range f.clusters {
		out = append(out, cl)
	}
	return out, nil
}
func (f *fakeCloud) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	return nil, errors.New("unreachable")
}

type oneCloud struct{ p provision.Provider }

func (o oneCloud) Provider(context.Context, string) (provision.Provider, error) { return o.p, nil }
func (o oneCloud) Opened() []string                                             { return []string{"fake"} }

func newTestController(t *testing.T, cloud *fakeCloud) *Controller {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(home, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c := New(st, cfg, oneCloud{cloud}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	c.Rand = func() float64 { return 0 }
	return c
}

// runningAttempt stores a job with one attempt running on the fake cloud.
func runningAttempt(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) (*store.Job, *store.Attempt) {
	t.Helper()
	ctx := context.Background()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: b}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Store.NewAttempt(ctx, id, 0, func(n int) string { return provision.ClusterName(id, 0, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	cloud.clusters[a.Cluster] = &provision.Cluster{Name: a.Cluster, Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}}}
	if err := c.Store.MarkLaunched(ctx, a.ID, "fake", "r", "r-a", []string{"i-0"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Cloud, a.Region, a.Zone, a.State = "fake", "r", "r-a", lifecycle.AttemptRunning
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j, a
}

func TestJudgeAsksCloudAgainBeforeBlamingTheTask(t *testing.T) {
	code := func(n int) node.Status {
		return node.Status{Started: true, Done: true, Phase: node.PhaseRun, ExitCode: n}
	}
	for _, tc := range []struct {
		name        string
		statuses    []node.Status
		preempted   bool
		wantOutcome string
		wantRestart int
	}{
		// The snapshot said running; by the time the node was polled the
		// cloud had taken it, killing the agent.
		{"agent dead, cloud took the node", []node.Status{{Started: true}}, true, "preempted", 0},
		// The node runs but the agent died without a code (killed, or
		// its disk full): no code known is a failure within the budget.
		{"agent dead, node still up", []node.Status{{Started: true}}, false, "user_failure", 1},
		// A spot interruption's SIGTERM reached the task before the cloud
		// reported the node gone.
		{"exit 143, cloud took the node", []node.Status{code(143)}, true, "preempted", 0},
		{"exit 143, node still up", []node.Status{code(143)}, false, "user_failure", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {max_restarts_on_errors: 3}}\nrun: train\n")
			snapshot := cloud.clusters[a.Cluster]
			if tc.preempted {
				cloud.clusters[a.Cluster] = &provision.Cluster{Name: a.Cluster, Nodes: []provision.Node{{Rank: 0, State: provision.NodePreempted}}}
			}
			if err := c.judge(context.Background(), j, a, cloud, snapshot, tc.statuses); err != nil {
				t.Fatal(err)
			}
			if as, _ := c.Store.Attempts(context.Background(), j.ID); as[0].State != lifecycle.AttemptEnded {
				// A dead agent with no exit code is looked at twice.
				if tc.statuses[0].Done || tc.preempted {
					t.Fatalf("attempt still %s after one look", as[0].State)
				}
				if err := c.judge(context.Background(), j, as[0], cloud, snapshot, tc.statuses); err != nil {
					t.Fatal(err)
				}
			}
			as, _ := c.Store.Attempts(context.Background(), j.ID)
			if got := as[0].Outcome; got != tc.wantOutcome {
				t.Errorf("outcome %q, want %q", got, tc.wantOutcome)
			}
			got, _ := c.Store.Job(context.Background(), j.ID)
			if got.RestartsOnErrors != tc.wantRestart || got.Status != lifecycle.Recovering {
				t.Errorf("job %s restarts_on_errors %d, want RECOVERING and %d", got.Status, got.RestartsOnErrors, tc.wantRestart)
			}
		})
	}
}

func TestSweepTerminatesOnlyOrphans(t *testing.T) {
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	_, live := runningAttempt(t, c, cloud, "run: train\n")
	// Left by a controller killed after ending an attempt, before teardown.
	cloud.clusters["sortie-99-0-1"] = &provision.Cluster{Name: "sortie-99-0-1", Nodes: []provision.Node{{State: provision.NodeRunning}}}
	if err := c.SweepOrphans(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(cloud.terminated) != 1 || cloud.terminated[0] != "sortie-99-0-1" {
		t.Errorf("terminated %v; want only the orphan, not %s", cloud.terminated, live.Cluster)
	}
}

func TestUnreachableNodeIsNotAFailureUntilTheLimit(t *testing.T) {
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	c.Config.Controller.UnreachableChecks = 3
	ctx := context.Background()
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	snap := snapshot{clusters: map[string]*provision.Cluster{a.Cluster: cloud.clusters[a.Cluster]}, failed: map[string]error{}}
	p, err := c.spec(j)
	if err != nil {
		t.Fatal(err)
	}
	for check := 1; check <= 3; check++ {
		a, err = c.Store.LastAttempt(ctx, j.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.observe(ctx, j, p, a, snap); err != nil {
			t.Fatal(err)
		}
		got, _ := c.Store.Job(ctx, j.ID)
		if check < 3 {
			if got.Status != lifecycle.Running || !strings.Contains(got.StatusReason, "cannot reach node 0") {
				t.Fatalf("check %d: job %s %q; want RUNNING with the reason shown", check, got.Status, got.StatusReason)
			}
			continue
		}
		as, _ := c.Store.Attempts(ctx, j.ID)
		if as[0].Outcome != "node_lost" || got.Status != lifecycle.Recovering || got.RestartsOnErrors != 0 {
			t.Fatalf("after %d failed checks: outcome %q job %s restarts %d", check, as[0].Outcome, got.Status, got.RestartsOnErrors)
		}
	}
}

func TestStatusCallFailureIsNotGone(t *testing.T) {
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	ctx := context.Background()
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	p, _ := c.spec(j)
	// The cloud did not answer this tick: the cluster is unknown, not gone.
	snap := snapshot{clusters: map[string]*provision.Cluster{}, failed: map[string]error{"fake": errors.New("throttled")}}
	if err := c.observe(ctx, j, p, a, snap); err != nil {
		t.Fatal(err)
	}
	as, _ := c.Store.Attempts(ctx, j.ID)
	if as[0].State != lifecycle.AttemptRunning {
		t.Errorf("attempt %s after a failed status call; want it still running", as[0].State)
	}
}

func TestCodesOfStoppedNodesAreNotTheTasks(t *testing.T) {
	ctx := context.Background()
	run := func(n int) node.Status {
		return node.Status{Started: true, Done: true, Phase: node.PhaseRun, ExitCode: n}
	}
	stopped := func(phase string, n int) node.Status {
		return node.Status{Started: true, Done: true, Phase: phase, ExitCode: n, Stopped: true}
	}
	for _, tc := range []struct {
		name        string
		statuses    []node.Status
		wantOutcome string
		wantCodes   string
		wantStatus  lifecycle.Status
	}{
		// Node 0 failed; sortie stopped node 1, which recorded 143. 143 is
		// listed, but it was sortie's doing: the budget (0) decides.
		{"stopped peer's 143 does not match", []node.Status{run(1), stopped(node.PhaseRun, 143)}, "user_failure", "1,?", lifecycle.Failed},
		// Node 1 was stopped during its setup: that is no setup failure.
		{"stopped during setup", []node.Status{run(1), stopped(node.PhaseSetup, 143)}, "user_failure", "1,?", lifecycle.Failed},
		{"listed code of the failing node matches", []node.Status{run(143), stopped(node.PhaseRun, 143)}, "user_failure", "143,?", lifecycle.Recovering},
		{"every node stopped", []node.Status{stopped(node.PhaseRun, 143), stopped(node.PhaseRun, 143)}, "node_lost", "?,?", lifecycle.Recovering},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			j, a := runningAttempt(t, c, cloud, "num_nodes: 2\nresources: {job_recovery: {recover_on_exit_codes: [143]}}\nrun: train\n")
			cl := cloud.clusters[a.Cluster]
			cl.Nodes = append(cl.Nodes, provision.Node{Rank: 1, State: provision.NodeRunning})
			if err := c.judge(ctx, j, a, cloud, cl, tc.statuses); err != nil {
				t.Fatal(err)
			}
			as, _ := c.Store.Attempts(ctx, j.ID)
			if as[0].Outcome != tc.wantOutcome || strategy.FormatExitCodes(as[0].ExitCodes) != tc.wantCodes {
				t.Errorf("outcome %s codes %s, want %s %s", as[0].Outcome, strategy.FormatExitCodes(as[0].ExitCodes), tc.wantOutcome, tc.wantCodes)
			}
			if got, _ := c.Store.Job(ctx, j.ID); got.Status != tc.wantStatus {
				t.Errorf("job %s, want %s (%s)", got.Status, tc.wantStatus, as[0].Decision)
			}
		})
	}
}

// A tick that read a job before another step of the same job started its
// next attempt must neither start a second attempt, nor tear the live one
// down, nor end the job around it.
func TestStaleReadNeverTouchesTheLiveAttempt(t *testing.T) {
	ctx := context.Background()
	for _, cancel := range []bool{false, true} {
		cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
		c := newTestController(t, cloud)
		j, live := runningAttempt(t, c, cloud, "run: train\n")
		if cancel {
			if _, err := c.Store.RequestCancel(ctx, []int64{j.ID}); err != nil {
				t.Fatal(err)
			}
			j, _ = c.Store.Job(ctx, j.ID)
		}
		// The stale view: no open attempt.
		if err := c.reconcile(ctx, j, nil, snapshot{clusters: map[string]*provision.Cluster{}, failed: map[string]error{}}); err != nil {
			t.Fatal(err)
		}
		as, _ := c.Store.Attempts(ctx, j.ID)
		if len(as) != 1 || as[0].State != lifecycle.AttemptRunning || len(cloud.terminated) != 0 {
			t.Errorf("cancel=%v: attempts %d (first %s), terminated %v; want the live attempt %s untouched",
				cancel, len(as), as[0].State, cloud.terminated, live.Cluster)
		}
		if got, _ := c.Store.Job(ctx, j.ID); got.Status.Terminal() {
			t.Errorf("cancel=%v: job ended %s around its running attempt", cancel, got.Status)
		}
	}
}

func TestSweepSparesTheClusterKeptForARestart(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {max_restarts_on_errors: 2}}\nrun: train\n")
	// The attempt failed; the task restarts on the same cluster after a back-off.
	if err := c.judge(ctx, j, a, cloud, cloud.clusters[a.Cluster], []node.Status{{Started: true, Done: true, Phase: node.PhaseRun, ExitCode: 1}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Store.Job(ctx, j.ID); got.Status != lifecycle.Recovering {
		t.Fatalf("job %s, want RECOVERING", got.Status)
	}
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cloud.terminated) != 0 {
		t.Errorf("the sweep terminated %v, the cluster kept for the restart", cloud.terminated)
	}
}

// Only the cloud's own reasons are a preemption: an instance stopped by a
// user (EC2's Client.UserInitiatedShutdown, an on-demand VM too) is a lost
// node, and nothing says "spot".
func TestAUsersStopIsALostNodeNotAPreemption(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		state   provision.NodeState
		reason  string
		outcome string
	}{
		{provision.NodeStopped, "Client.UserInitiatedShutdown", "node_lost"},
		{provision.NodePreempted, "Server.SpotInstanceTermination", "preempted"},
	} {
		cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
		c := newTestController(t, cloud)
		j, a := runningAttempt(t, c, cloud, "run: train\n")
		cl := cloud.clusters[a.Cluster]
		cl.Nodes[0].State, cl.Nodes[0].Reason = tc.state, tc.reason
		snap := snapshot{clusters: map[string]*provision.Cluster{a.Cluster: cl}, failed: map[string]error{}}
		if err := c.observe(ctx, j, nil, a, snap); err != nil {
			t.Fatal(err)
		}
		as, _ := c.Store.Attempts(ctx, j.ID)
		if as[0].Outcome != tc.outcome || strings.Contains(as[0].Decision+as[0].Reason, "spot preemption") || !strings.Contains(as[0].Decision, tc.reason) {
			t.Errorf("%s (%s): outcome %s, reason %q, decision %q; want %s naming %s, never \"spot preemption\"",
				tc.state, tc.reason, as[0].Outcome, as[0].Reason, as[0].Decision, tc.outcome, tc.reason)
		}
	}
}

// A task that wrote over its exit code (run 99999999999) spends the budget
// with its code unknown and the reason kept; it never ends the job with a
// code outside 0-255, nor as a free recovery.
func TestForgedExitCodeIsAFailureWithNoCode(t *testing.T) {
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {max_restarts_on_errors: 0}}\nrun: train\n")
	invalid := `exit_code holds "run 99999999999", whose code is not an exit code (0-255)`
	st := []node.Status{{Started: true, Done: true, Invalid: invalid}}
	if err := c.judge(context.Background(), j, a, cloud, cloud.clusters[a.Cluster], st); err != nil {
		t.Fatal(err)
	}
	as, _ := c.Store.Attempts(context.Background(), j.ID)
	if as[0].Outcome != string(strategy.UserFailure) || len(as[0].ExitCodes) != 1 || as[0].ExitCodes[0] != nil {
		t.Errorf("attempt %s with codes %v, want user_failure with the code unknown", as[0].Outcome, as[0].ExitCodes)
	}
	if !strings.Contains(as[0].Reason, "node 0 left no valid exit code: "+invalid) {
		t.Errorf("attempt reason %q does not say why", as[0].Reason)
	}
	got, _ := c.Store.Job(context.Background(), j.ID)
	if got.Status != lifecycle.Failed || got.RecoveryCount != 0 {
		t.Errorf("job %s with %d recoveries, want FAILED with none", got.Status, got.RecoveryCount)
	}
}
