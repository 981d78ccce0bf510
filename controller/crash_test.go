package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node"
	"sortie/strategy"
)

// localController is a controller of a fresh home whose nodes are real
// processes of this machine (the local provider). Another controller over
// the same home and store stands for the next controller after a crash.
func localController(t *testing.T) *Controller {
	t.Helper()
	return localControllerWith(t, "")
}

// unsandboxedLocalController is localController whose local tasks run on
// this machine (local.sandbox: off), for tests whose task plays a fault of
// the node's own files, which a sandboxed task cannot reach.
func unsandboxedLocalController(t *testing.T) *Controller {
	t.Helper()
	return localControllerWith(t, "local:\n  sandbox: \"off\"\n")
}

// localControllerWith is localController with configYAML as its home's
// config.yaml.
func localControllerWith(t *testing.T, configYAML string) *Controller {
	t.Helper()
	h := t.TempDir()
	if configYAML != "" {
		if err := os.WriteFile(filepath.Join(h, "config.yaml"), []byte(configYAML), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(context.Background(), filepath.Join(h, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := restarted(t, &Controller{Store: st, Config: config.Config{Home: h}})
	t.Cleanup(func() {
		// Every cluster the test left, with its processes.
		p := local.New(local.Config{Home: h})
		cls, _ := p.List(context.Background())
		for _, cl := range cls {
			p.Terminate(context.Background(), cl.Name)
		}
	})
	return c
}

// restarted is the controller that starts after old died: same home and
// store, nothing else carried over.
func restarted(t *testing.T, old *Controller) *Controller {
	t.Helper()
	cfg, err := config.Load(old.Config.Home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c := New(old.Store, cfg, oneCloud{local.New(local.Config{Home: old.Config.Home, Sandbox: cfg.Local.Sandbox})}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	c.Rand = func() float64 { return 0 }
	return c
}

// step reconciles job id once, as a tick would.
func step(t *testing.T, c *Controller, id int64) (*store.Job, *store.Attempt) {
	t.Helper()
	ctx := context.Background()
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Store.LastAttempt(ctx, id, j.CurrentTask)
	if err != nil {
		t.Fatal(err)
	}
	if a != nil && (a.State == lifecycle.AttemptEnded || isReplaced(a)) {
		a = nil
	}
	var open []*store.Attempt
	if a != nil {
		open = append(open, a)
	}
	j.NextActionAt = nil // no back-off: the clock is fixed
	if err := c.reconcile(ctx, j, a, c.snapshot(ctx, open)); err != nil {
		t.Fatal(err)
	}
	j, _ = c.Store.Job(ctx, id)
	a, _ = c.Store.LastAttempt(ctx, id, j.CurrentTask)
	return j, a
}

// untilRunning steps job id until its attempt runs.
func untilRunning(t *testing.T, c *Controller, id int64) *store.Attempt {
	t.Helper()
	for range 10 {
		if _, a := step(t, c, id); a != nil && a.State == lifecycle.AttemptRunning {
			return a
		}
	}
	t.Fatal("the attempt never ran")
	return nil
}

// runners reaches every node of a's cluster.
func runners(t *testing.T, c *Controller, a *store.Attempt) []provision.Runner {
	t.Helper()
	prov, cl, err := c.cluster(context.Background(), a)
	if err != nil || cl == nil {
		t.Fatalf("cluster of %s: %v", a.Cluster, err)
	}
	var rs []provision.Runner
	for rank := range cl.Nodes {
		r, err := c.runner(context.Background(), prov, cl, rank, a)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// waitFor polls a node every 10ms until cond holds of its status.
func waitFor(t *testing.T, r provision.Runner, what string, cond func(node.Status) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := node.Poll(context.Background(), r)
		if err == nil && cond(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not seen within 15s (%+v, %v)", r.Dir(), what, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func done(st node.Status) bool    { return st.Done }
func running(st node.Status) bool { return st.AgentAlive && st.Phase == node.PhaseRun }

// A controller killed after stopping an attempt's nodes and before
// recording its end left stop markers beside real exit codes. The next
// controller records the real codes and the decision they call for: node
// 0 exited 29 with a budget of 0, so the job FAILED with 29, never a free
// recovery and never SUCCEEDED.
func TestCrashWhileEndingKeepsTheRealExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		wait      []func(node.Status) bool
		codes     string
	}{
		{"both nodes ended", `[ "$SORTIE_NODE_RANK" = 0 ] && exit 29; exit 0`, []func(node.Status) bool{done, done}, "29,0"},
		{"node 1 still running", `[ "$SORTIE_NODE_RANK" = 0 ] && exit 29; sleep 300`, []func(node.Status) bool{done, running}, "29,?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := localController(t)
			id := createJob(t, c, "num_nodes: 2\nresources: {cloud: local, job_recovery: {max_restarts_on_errors: 0}}\nrun: '"+tc.run+"'\n")
			a := untilRunning(t, c, id)
			rs := runners(t, c, a)
			for rank, r := range rs {
				waitFor(t, r, "the task's end or run", tc.wait[rank])
			}
			// What the dead controller did before it could record the end.
			for _, r := range rs {
				if err := node.StopWithin(ctx, r, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			c = restarted(t, c)
			j, _ := step(t, c, id)
			as, _ := c.Store.Attempts(ctx, id)
			if j.Status != lifecycle.Failed || len(as) != 1 || as[0].Outcome != string(strategy.UserFailure) || strategy.FormatExitCodes(as[0].ExitCodes) != tc.codes {
				t.Errorf("job %s, attempts %d, outcome %s, codes %s (%s); want FAILED, one user_failure with %s",
					j.Status, len(as), as[0].Outcome, strategy.FormatExitCodes(as[0].ExitCodes), as[0].Decision, tc.codes)
			}
		})
	}
}

// Nodes sortie stops because another node was lost have unknown codes;
// a cancel stops them within their grace and records the codes they end
// with (what the task did with its SIGTERM), and its decision names who
// cancelled.
func TestCodesOfNodesSortieStopped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(t *testing.T, c *Controller, a *store.Attempt)
		outcome  strategy.Outcome
		codes    string
		decision string
	}{
		{"cancel", func(t *testing.T, c *Controller, a *store.Attempt) {
			if _, err := c.Store.RequestCancelBy(context.Background(), []int64{a.JobID}, "alice"); err != nil {
				t.Fatal(err)
			}
		}, strategy.Cancelled, "7,7", "cancelled by alice"},
		{"node 1 lost", func(t *testing.T, c *Controller, a *store.Attempt) {
			if err := local.New(local.Config{Home: c.Config.Home}).Preempt(context.Background(), a.Cluster, 1); err != nil {
				t.Fatal(err)
			}
		}, strategy.Preempted, "?,?", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := localController(t)
			id := createJob(t, c, "num_nodes: 2\nresources: {cloud: local}\nrun: trap 'exit 7' TERM; sleep 300 & wait\n")
			a := untilRunning(t, c, id)
			for _, r := range runners(t, c, a) {
				waitFor(t, r, "the task running", running)
			}
			tc.end(t, c, a)
			step(t, c, id)
			as, _ := c.Store.Attempts(ctx, id)
			if as[0].Outcome != string(tc.outcome) || strategy.FormatExitCodes(as[0].ExitCodes) != tc.codes {
				t.Errorf("outcome %s codes %s, want %s with %s", as[0].Outcome, strategy.FormatExitCodes(as[0].ExitCodes), tc.outcome, tc.codes)
			}
			if tc.decision != "" && (as[0].Decision != tc.decision || strings.Contains(as[0].Reason, "cancelled by")) {
				t.Errorf("reason %q, decision %q; want the decision %q, who cancelled named once", as[0].Reason, as[0].Decision, tc.decision)
			}
		})
	}
}

// A controller killed while starting a node, after claiming it and before
// its agent began, leaves a half start; the next controller finishes it
// and the task runs, once.
func TestCrashWhileStartingFinishesTheStart(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "resources: {cloud: local}\nrun: echo ran\n")
	// The launch succeeds; the start never gets through.
	c.Providers = oneCloud{noRunner{local.New(local.Config{Home: c.Config.Home})}}
	_, a := step(t, c, id)
	if a == nil || a.State != lifecycle.AttemptStarting {
		t.Fatalf("attempt %+v, want one starting", a)
	}
	c = restarted(t, c)
	r := runners(t, c, a)[0]
	// The dead controller's half start: the node claimed, no agent.
	if err := os.MkdirAll(filepath.Join(r.Dir(), "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	c = restarted(t, c)
	untilRunning(t, c, id)
	waitFor(t, r, "the task's end", done)
	j, _ := step(t, c, id)
	as, _ := c.Store.Attempts(ctx, id)
	if j.Status != lifecycle.Succeeded || len(as) != 1 || as[0].Outcome != string(strategy.Succeeded) {
		t.Errorf("job %s with %d attempts (%s: %s), want SUCCEEDED at the first", j.Status, len(as), as[0].Outcome, as[0].Reason)
	}
	log, _ := os.ReadFile(home.NodeLog(c.Config.Home, id, 0, 1, 0))
	if !strings.Contains(string(log), "ran") {
		t.Errorf("kept log %q, want the task's output", log)
	}
}

// noRunner is a provider whose nodes cannot be reached.
type noRunner struct{ provision.Provider }

func (noRunner) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	return nil, errors.New("unreachable")
}

// The end of an attempt is recorded before sortie stops any of its nodes:
// a controller killed between the two leaves the true end, not stop
// markers in front of it.
func TestEndIsRecordedBeforeAnyStop(t *testing.T) {
	c := localController(t)
	id := createJob(t, c, "num_nodes: 2\nresources: {cloud: local}\nrun: '[ \"$SORTIE_NODE_RANK\" = 0 ] && exit 29; sleep 300'\n")
	a := untilRunning(t, c, id)
	rs := runners(t, c, a)
	waitFor(t, rs[0], "the task's end", done)
	waitFor(t, rs[1], "the task running", running)
	w := &watchStops{Provider: local.New(local.Config{Home: c.Config.Home}), st: c.Store, job: id}
	c.Providers = oneCloud{w}
	step(t, c, id)
	if w.stops == 0 || w.before != 0 {
		t.Errorf("%d stops, %d of them before the end was recorded; want some, none before", w.stops, w.before)
	}
}

// watchStops counts the Stops sent to job's nodes, and those sent while
// its attempt was not yet recorded as ended.
type watchStops struct {
	provision.Provider
	st            *store.Store
	job           int64
	stops, before int
}

func (w *watchStops) Runner(ctx context.Context, cl *provision.Cluster, rank int) (provision.Runner, error) {
	r, err := w.Provider.Runner(ctx, cl, rank)
	if err != nil {
		return nil, err
	}
	return stopWatcher{Runner: r, w: w}, nil
}

type stopWatcher struct {
	provision.Runner
	w *watchStops
}

func (s stopWatcher) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	if req, ok := node.Decode(script); ok && req.Op == node.OpStop {
		s.w.stops++
		if as, err := s.w.st.Attempts(ctx, s.w.job); err != nil || as[0].State != lifecycle.AttemptEnded {
			s.w.before++
		}
	}
	return s.Runner.Exec(ctx, script, stdin)
}

// A node that cannot write its exit code (a full disk, injected here by
// directories in the way of the files) never turns a failure into a free
// recovery: the code it kept in a marker's name counts, and with no code
// at all the failure spends the budget (0 here: FAILED).
func TestUnwritableExitCodeIsNoFreeRecovery(t *testing.T) {
	for _, tc := range []struct {
		name, block, codes, reason string
	}{
		{"the code kept in a marker", `mkdir -p "$SORTIE_NODE_DIR/record/exit_code.tmp"`, "1", "could not be written"},
		{"no code at all", `touch "$SORTIE_NODE_DIR/record"`, "?", "died without an exit code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := unsandboxedLocalController(t)
			id := createJob(t, c, "resources: {cloud: local}\nrun: '"+tc.block+"; exit 1'\n")
			a := untilRunning(t, c, id)
			waitFor(t, runners(t, c, a)[0], "the agent's end", func(st node.Status) bool { return st.Done || !st.AgentAlive })
			var j *store.Job
			for range 2 { // a dead agent is looked at twice
				if j, _ = step(t, c, id); j.Status.Terminal() {
					break
				}
			}
			as, _ := c.Store.Attempts(ctx, id)
			if j.Status != lifecycle.Failed || len(as) != 1 || strategy.FormatExitCodes(as[0].ExitCodes) != tc.codes || !strings.Contains(as[0].Reason, tc.reason) {
				t.Errorf("job %s, %d attempts, first %s %s (%s); want FAILED after one attempt with %s, %q",
					j.Status, len(as), as[0].Outcome, strategy.FormatExitCodes(as[0].ExitCodes), as[0].Reason, tc.codes, tc.reason)
			}
		})
	}
}
