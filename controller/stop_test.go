package controller

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node"
)

// graceClock is a controller's Sleep that waits for nothing: it adds up
// the time the controller asked to wait, and at each wait checks that the
// task still runs (no SIGKILL came early). It also records, through
// stopRecorder, when each stop request reached the node.
type graceClock struct {
	check func() node.Status
	// settle makes each wait last, for real, until the task has ended.
	settle bool
	mu     sync.Mutex
	slept  time.Duration
	// endedAt is the time slept when the task was first seen ended.
	endedAt time.Duration
	ended   bool
	// stops are the stop requests' TICKS ("0": SIGTERM only; else
	// SIGTERM then SIGKILL), each with the time slept before it.
	stops []stopAt
}

type stopAt struct {
	ticks string
	at    time.Duration
}

func (g *graceClock) sleep(_ context.Context, d time.Duration) bool {
	st := g.check()
	// A task that ends on SIGTERM is given the moment it needs to (real
	// processes end on their own time, later on a busy machine) before
	// the clock moves.
	for limit := time.Now().Add(60 * time.Second); g.settle && !st.Done && time.Now().Before(limit); st = g.check() {
		time.Sleep(10 * time.Millisecond)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if st.Done && !g.ended {
		g.ended, g.endedAt = true, g.slept
	}
	g.slept += d
	return true
}

// stopRecorder is the local provider whose runners tell g of each stop.
type stopRecorder struct {
	*local.Provider
	g *graceClock
}

func (s stopRecorder) Runner(ctx context.Context, cl *provision.Cluster, rank int) (provision.Runner, error) {
	r, err := s.Provider.Runner(ctx, cl, rank)
	if err != nil {
		return nil, err
	}
	return recordingRunner{r, s.g}, nil
}

type recordingRunner struct {
	provision.Runner
	g *graceClock
}

func (r recordingRunner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	if req, ok := node.Decode(script); ok && req.Op == node.OpStop {
		r.g.mu.Lock()
		r.g.stops = append(r.g.stops, stopAt{req.Vars["TICKS"], r.g.slept})
		r.g.mu.Unlock()
	}
	return r.Runner.Exec(ctx, script, stdin)
}

// A cancel gives the task job_recovery.termination_grace between SIGTERM
// and SIGKILL, as a notice does, on the controller's clock: a task that
// ignores SIGTERM runs on until the grace has passed and is killed then;
// a task that ends on SIGTERM is not waited for.
func TestCancelWaitsTheTerminationGrace(t *testing.T) {
	const ignoreTerm = "run: |\n  trap '' TERM\n  sleep 600\n"
	for _, tc := range []struct {
		name, yaml string
		grace      time.Duration
		ignores    bool
	}{
		{"ignores SIGTERM, grace given", ignoreTerm + "resources:\n  job_recovery:\n    termination_grace: 12s\n", 12 * time.Second, true},
		{"ignores SIGTERM, default grace", ignoreTerm, node.DefaultTerminationGrace, true},
		{"ends on SIGTERM", "run: sleep 600\nresources:\n  job_recovery:\n    termination_grace: 12s\n", 12 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := localController(t)
			id := createJob(t, c, tc.yaml)
			a := untilRunning(t, c, id)
			r := runners(t, c, a)[0]
			waitFor(t, r, "the run phase", running)
			g := &graceClock{check: func() node.Status {
				st, err := node.Poll(ctx, r)
				if err != nil {
					t.Errorf("poll during the grace: %v", err)
				}
				return st
			}, settle: !tc.ignores}
			c.Sleep = g.sleep
			c.Providers = oneCloud{stopRecorder{local.New(local.Config{Home: c.Config.Home}), g}}
			if _, err := c.Store.RequestCancel(ctx, []int64{id}); err != nil {
				t.Fatal(err)
			}
			if j, _ := step(t, c, id); j.Status != lifecycle.Cancelled {
				t.Fatalf("job %s, want CANCELLED", j.Status)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.stops) == 0 || g.stops[0] != (stopAt{"0", 0}) {
				t.Fatalf("stops %v, want a SIGTERM first, before any wait", g.stops)
			}
			if !tc.ignores {
				if len(g.stops) != 1 || g.slept >= time.Second {
					t.Errorf("stops %v after waiting %s; want the SIGTERM only, and no wait for a task that ends on it", g.stops, g.slept)
				}
				return
			}
			if g.ended {
				t.Errorf("the task had ended after %s of a %s grace: killed early", g.endedAt, tc.grace)
			}
			if len(g.stops) != 2 || g.stops[1].ticks != "1" || g.stops[1].at != tc.grace {
				t.Errorf("stops %v, want the SIGKILL after %s", g.stops, tc.grace)
			}
		})
	}
}
