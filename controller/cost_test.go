package controller

import (
	"context"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

// testBook is a price.Book over quotes the test writes, each holding from
// its Effective time until the next of its key.
type testBook map[price.Key][]price.Quote

func (b testBook) History(k price.Key, from, to time.Time) []price.Quote {
	var out []price.Quote
	for _, q := range b[k] {
		switch {
		case !q.Effective.After(from):
			out = []price.Quote{q} // the one in effect at from
		case q.Effective.Before(to):
			out = append(out, q)
		}
	}
	return out
}

func quote(k price.Key, perHour float64, at time.Time) price.Quote {
	return price.Quote{Key: k, PerHour: perHour, Source: "test", Effective: at, ReadAt: at}
}

// testClock is a clock the controller and its store share, moved by the
// test.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// pricedLocalController is a controller on the local cloud (unsandboxed)
// whose store and loop share clk, with book as its prices.
func pricedLocalController(t *testing.T, clk *testClock, book price.Book) *Controller {
	t.Helper()
	h := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(h, "state.db"), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Load(h, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Local.Sandbox = "off"
	p := local.New(local.Config{Home: h, Sandbox: cfg.Local.Sandbox})
	t.Cleanup(func() {
		cls, _ := p.List(context.Background())
		for _, cl := range cls {
			p.Terminate(context.Background(), cl.Name)
		}
	})
	c := New(st, cfg, oneCloud{p}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Now, c.Rand, c.Prices = clk.Now, func() float64 { return 0 }, book
	return c
}

// untilAttemptEnded steps job id until its attempt n of task 0 has ended.
func untilAttemptEnded(t *testing.T, c *Controller, id int64, n int) *store.Attempt {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		step(t, c, id)
		as, _ := c.Store.Attempts(context.Background(), id)
		if len(as) >= n && as[n-1].State == lifecycle.AttemptEnded {
			return as[n-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("attempt %d of job %d never ended", n, id)
	return nil
}

func costCounter(t *testing.T, c *Controller, owner, cloud string) float64 {
	t.Helper()
	fams, err := c.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "sortie_cost_dollars_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["owner"] == owner && labels["cloud"] == cloud {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Each attempt costs its nodes' price times the time from its launch
// request to its end; a restart on the same cluster is billed from the
// end of the attempt before; the job's cost is the sum, and the counter
// counts it.
func TestAttemptCostsAddUpThroughRestarts(t *testing.T) {
	ctx := context.Background()
	clk := &testClock{t: t0}
	k := price.Key{Cloud: "local", Region: "local"}
	c := pricedLocalController(t, clk, testBook{k: {quote(k, 3.6, t0.Add(-time.Hour)), quote(k, 7.2, t0.Add(25*time.Minute))}})
	id := createJob(t, c, "num_nodes: 2\nresources: {cloud: local, job_recovery: {max_restarts_on_errors: 1}}\nrun: exit 1\n")
	untilRunning(t, c, id)
	clk.Set(t0.Add(10 * time.Minute))
	a1 := untilAttemptEnded(t, c, id, 1)
	// 2 nodes x $3.60/h x 10 minutes.
	if a1.Cost == nil || math.Abs(a1.Cost.Dollars-1.2) > 1e-9 || a1.Cost.Estimate {
		t.Fatalf("first attempt cost %+v, want $1.20", a1.Cost)
	}
	j, _ := c.Store.Job(ctx, id)
	if got := j.CostAt(clk.Now()); got == nil || math.Abs(got.Dollars-1.2) > 1e-9 || got.Estimate {
		t.Fatalf("job cost after the first attempt %+v, want $1.20", got)
	}
	clk.Set(t0.Add(20 * time.Minute))
	a2 := untilRunning(t, c, id)
	if a2.Cluster != a1.Cluster || a2.Billing.From == nil || !a2.Billing.From.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("restart on the same cluster billed from %v, want %v", a2.Billing.From, t0.Add(10*time.Minute))
	}
	j, _ = c.Store.Job(ctx, id)
	// While it runs: the ended attempt and the running one's price so far.
	if got := j.CostAt(clk.Now()); got == nil || math.Abs(got.Dollars-2.4) > 1e-9 || !got.Estimate {
		t.Fatalf("job cost while the second attempt runs %+v, want ~$2.40", got)
	}
	clk.Set(t0.Add(30 * time.Minute))
	a2 = untilAttemptEnded(t, c, id, 2)
	// From 10m to 30m, the price doubling at 25m: 2 x (3.6 x 15 + 7.2 x 5)/60.
	if want := 2 * (3.6*15 + 7.2*5) / 60; a2.Cost == nil || math.Abs(a2.Cost.Dollars-want) > 1e-9 {
		t.Fatalf("second attempt cost %+v, want $%.2f", a2.Cost, want)
	}
	j, _ = c.Store.Job(ctx, id)
	if j.Status != lifecycle.Failed {
		t.Fatalf("job %s, want FAILED", j.Status)
	}
	want := 1.2 + 3.0
	if got := j.CostAt(clk.Now()); got == nil || math.Abs(got.Dollars-want) > 1e-9 || got.Estimate || j.CostSince != nil {
		t.Fatalf("job cost %+v, want $%.2f", got, want)
	}
	if got := costCounter(t, c, j.Owner, "local"); math.Abs(got-want) > 1e-9 {
		t.Errorf("sortie_cost_dollars_total = %v, want %v", got, want)
	}
}

// A running job whose cost crosses max_cost is stopped as a cancel stops
// it and ends FAILED saying what it spent; checked at the controller's
// steps, on its clock.
func TestMaxCostStopsARunningJob(t *testing.T) {
	ctx := context.Background()
	clk := &testClock{t: t0}
	k := price.Key{Cloud: "local", Region: "local"}
	c := pricedLocalController(t, clk, testBook{k: {quote(k, 0.6, t0.Add(-time.Hour))}})
	id := createJob(t, c, "resources: {cloud: local, job_recovery: {max_cost: 1, max_restarts_on_errors: 3}}\n"+
		"run: trap 'echo got TERM; exit 143' TERM; sleep 300 & wait\n")
	untilRunning(t, c, id)
	clk.Set(t0.Add(99 * time.Minute))
	if j, a := step(t, c, id); j.Status != lifecycle.Running || a.State != lifecycle.AttemptRunning {
		t.Fatalf("at $0.99 of $1: job %s, attempt %s; want it running", j.Status, a.State)
	}
	clk.Set(t0.Add(102 * time.Minute))
	j, a := step(t, c, id)
	if j.Status != lifecycle.Failed || j.FailureReason != "spent $1.02 of max_cost $1" {
		t.Fatalf("job %s (%q), want FAILED (spent $1.02 of max_cost $1)", j.Status, j.FailureReason)
	}
	if a.Outcome != string(strategy.BudgetSpent) || a.Cost == nil || math.Abs(a.Cost.Dollars-1.02) > 1e-9 {
		t.Fatalf("attempt %s costing %+v, want over_budget costing $1.02", a.Outcome, a.Cost)
	}
	if len(a.ExitCodes) != 1 || a.ExitCodes[0] == nil || *a.ExitCodes[0] != 143 {
		t.Errorf("exit codes %v, want the task's own 143 after SIGTERM", strategy.FormatExitCodes(a.ExitCodes))
	}
	if j, _ := c.Store.Job(ctx, id); j.Status != lifecycle.Failed {
		t.Fatal("the job moved after it ended")
	}
}

// An attempt that max_cost could not pay an hour of is not launched; a
// placement above max_hourly_cost is skipped, saying why in the tries.
func TestBudgetsBeforeLaunch(t *testing.T) {
	ctx := context.Background()
	k := price.Key{Cloud: "local", Region: "local", Zone: "local-a", InstanceType: "m6i.large", Spot: true}
	for _, tc := range []struct {
		name, yaml string
		status     lifecycle.Status
		reason     string
		tryClass   string
	}{
		{"max_cost", "resources: {instance_type: m6i.large, use_spot: true, job_recovery: {max_cost: 1}}\nrun: \"true\"\n",
			lifecycle.Failed, "spent $0.00 of max_cost $1; the next attempt would cost $3.60/h, more than the $1.00 left", ""},
		{"max_hourly_cost", "resources: {instance_type: m6i.large, use_spot: true, max_hourly_cost: 2}\nrun: \"true\"\n",
			lifecycle.Pending, "", strategy.ClassOverHourlyCost},
		{"within both", "resources: {instance_type: m6i.large, use_spot: true, max_hourly_cost: 4, job_recovery: {max_cost: 4}}\nrun: \"true\"\n",
			lifecycle.Starting, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			c.Providers = oneCloud{localPlaced{cloud}}
			c.Prices = testBook{k: {quote(k, 3.6, c.Now().Add(-time.Hour))}}
			id := createJob(t, c, tc.yaml)
			j, _ := step(t, c, id)
			if j.Status != tc.status || (tc.reason != "" && j.FailureReason != tc.reason) {
				t.Fatalf("job %s (%q), want %s (%q)", j.Status, j.FailureReason, tc.status, tc.reason)
			}
			tries, _ := c.Store.LaunchTries(ctx, id)
			if tc.tryClass != "" {
				if len(tries) != 1 || tries[0].Class != tc.tryClass || !strings.Contains(tries[0].Message, "$3.60/h per node is above max_hourly_cost $2") {
					t.Fatalf("tries %+v, want one %s", tries, tc.tryClass)
				}
				if len(cloud.clusters) != 0 {
					t.Fatal("a placement above max_hourly_cost was launched")
				}
			}
			if tc.status == lifecycle.Starting {
				as, _ := c.Store.Attempts(ctx, id)
				if b := as[0].Billing; b.PerHour == nil || *b.PerHour != 3.6 || !b.Spot || b.InstanceType != "m6i.large" || b.Nodes != 1 {
					t.Fatalf("billing %+v, want 1 spot m6i.large at $3.60/h", b)
				}
			}
		})
	}
}

// localPlaced is a fakeCloud offering one local placement.
type localPlaced struct{ *fakeCloud }

func (localPlaced) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "local", Zone: "local-a"}}, nil
}

// A restart on the kept cluster is not started when what is left of
// max_cost would not pay an hour of it: the job ends FAILED, and the
// cluster is torn down.
func TestMaxCostBeforeARestartOnTheSameCluster(t *testing.T) {
	ctx := context.Background()
	clk := &testClock{t: t0}
	k := price.Key{Cloud: "local", Region: "local"}
	c := pricedLocalController(t, clk, testBook{k: {quote(k, 3.6, t0.Add(-time.Hour))}})
	id := createJob(t, c, "resources: {cloud: local, job_recovery: {max_cost: 3.7, max_restarts_on_errors: 2}}\nrun: exit 1\n")
	untilRunning(t, c, id)
	clk.Set(t0.Add(10 * time.Minute))
	a1 := untilAttemptEnded(t, c, id, 1)
	if a1.Action != string(strategy.Restart) {
		t.Fatalf("first attempt: %s, want a restart", a1.Action)
	}
	j, _ := step(t, c, id)
	want := "spent $0.60 of max_cost $3.7; the next attempt would cost $3.60/h, more than the $3.10 left"
	if j.Status != lifecycle.Failed || j.FailureReason != want {
		t.Fatalf("job %s (%q), want FAILED (%s)", j.Status, j.FailureReason, want)
	}
	if as, _ := c.Store.Attempts(ctx, id); len(as) != 1 {
		t.Fatalf("%d attempts, want the first only", len(as))
	}
	prov, _ := c.Providers.Provider(ctx, "local")
	if cls, _ := prov.List(ctx); len(cls) != 0 {
		t.Errorf("clusters left: %v", cls)
	}
}
