package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sortie/strategy/clocktest"
)

func nop(context.Context) error { return nil }

// submit hands w to q by Go or by Check, and says whether it was claimed.
func submit(q *Queue, via string, e Epoch, w Work) bool {
	if via == "Go" {
		return q.Go(context.Background(), e, w)
	}
	return q.Check(context.Background(), e, []Work{w}) == 1
}

func TestClaim(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before: job 7 ran and was released before the tick's read;
		// after: after it; held: job 7 is claimed when the tick claims.
		before, after, held bool
		id                  int64 // the job the tick claims
		want                bool
	}{
		{name: "a job never claimed", id: 7, want: true},
		{name: "a busy job is refused", held: true, id: 7, want: false},
		{name: "another job than the busy one", held: true, id: 8, want: true},
		{name: "released after the read: left to the next tick", after: true, id: 7, want: false},
		{name: "released before the read", before: true, id: 7, want: true},
		{name: "another job than the one released after the read", after: true, id: 8, want: true},
	} {
		for _, via := range []string{"Go", "Check"} {
			t.Run(via+"/"+tc.name, func(t *testing.T) {
				q := New(Config{Checkers: 4})
				if tc.before {
					q.Go(context.Background(), q.Read(), Work{ID: 7, Run: nop})
					q.Wait()
				}
				e := q.Read()
				if tc.after {
					q.Go(context.Background(), q.Read(), Work{ID: 7, Run: nop})
					q.Wait()
				}
				gate := make(chan struct{})
				if tc.held {
					q.Go(context.Background(), e, Work{ID: 7, Run: func(context.Context) error { <-gate; return nil }})
				}
				if got := submit(q, via, e, Work{ID: tc.id, Run: nop}); got != tc.want {
					t.Errorf("claimed %v, want %v", got, tc.want)
				}
				close(gate)
				q.Wait()
			})
		}
	}
}

func TestCheckClaimsEachJobOnce(t *testing.T) {
	q := New(Config{Checkers: 4})
	var runs atomic.Int32
	w := Work{ID: 1, Run: func(context.Context) error { runs.Add(1); return nil }}
	if n := q.Check(context.Background(), q.Read(), []Work{w, w, {ID: 2, Run: nop}}); n != 2 {
		t.Errorf("claimed %d, want 2", n)
	}
	q.Wait()
	if runs.Load() != 1 {
		t.Errorf("job 1 ran %d times, want once", runs.Load())
	}
}

func TestOldReleasesAreForgotten(t *testing.T) {
	q := New(Config{})
	q.Go(context.Background(), q.Read(), Work{ID: 7, Run: nop})
	q.Wait()
	q.Read() // a read that saw the release
	if len(q.released) != 1 {
		t.Fatalf("%d releases kept after one read, want 1: the read may still be claiming", len(q.released))
	}
	q.Read()
	if len(q.released) != 0 {
		t.Errorf("old releases kept: %v", q.released)
	}
}

func TestCheckBound(t *testing.T) {
	for _, tc := range []struct{ checkers, works int }{
		{1, 5}, {3, 0}, {3, 2}, {3, 3}, {3, 16}, {32, 200},
	} {
		t.Run(fmt.Sprintf("%d checkers, %d works", tc.checkers, tc.works), func(t *testing.T) {
			q := New(Config{Checkers: tc.checkers})
			var running, most atomic.Int32
			started := make(chan int64, tc.works)
			gate := make(chan struct{})
			ws := make([]Work, tc.works)
			for i := range ws {
				id := int64(i)
				ws[i] = Work{ID: id, Run: func(context.Context) error {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					started <- id
					<-gate
					running.Add(-1)
					return nil
				}}
			}
			if n := q.Check(context.Background(), q.Read(), ws); n != tc.works {
				t.Fatalf("claimed %d, want %d", n, tc.works)
			}
			// The first checkers all start before any ends: the pool is
			// as wide as its bound.
			full := min(tc.checkers, tc.works)
			for range full {
				<-started
			}
			close(gate)
			for range tc.works - full {
				<-started
			}
			q.Wait()
			if got := int(most.Load()); got != full {
				t.Errorf("at most %d ran at once, want %d", got, full)
			}
		})
	}
}

// A follow-up leaves the pool: the other checks go on while it runs.
func TestFollowUpLeavesThePool(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(time.Unix(0, 0))
	secondRan := make(chan struct{})
	q := New(Config{Now: clk.Now, Sleep: clk.Skip, Checkers: 1, Horizon: time.Second,
		Step: func(ctx context.Context, id int64) (bool, error) {
			select {
			case <-secondRan:
				return false, nil
			case <-time.After(10 * time.Second):
				return false, errors.New("the follow-up held the only checker")
			}
		},
		Report: func(_ int64, err error) { t.Error(err) },
	})
	q.Follow(true)
	q.Check(ctx, q.Read(), []Work{
		{ID: 1, Run: func(context.Context) error { q.ContinueAt(1, clk.Now()); return nil }},
		{ID: 2, Run: func(context.Context) error { close(secondRan); return nil }},
	})
	q.Wait()
}

func TestFollowUps(t *testing.T) {
	const (
		horizon = 5 * time.Second
	)
	never := time.Duration(-1)
	for _, tc := range []struct {
		name   string
		follow bool
		// cont is when Run asks to go on, never for not at all.
		cont time.Duration
		// again asks the first step to go on this much later.
		again time.Duration
		// end: the step at this index ends the job; fail: it fails.
		end, fail int
		cancel    bool // ctx ends during Run
		steps     []time.Duration
		reported  int
	}{
		{name: "off: a continue is ignored", cont: 0, again: never, end: -1, fail: -1},
		{name: "nothing asked", follow: true, cont: never, again: never, end: -1, fail: -1},
		{name: "continue now", follow: true, cont: 0, again: never, end: -1, fail: -1,
			steps: []time.Duration{0}},
		{name: "continue in the past", follow: true, cont: -time.Hour, again: never, end: 0, fail: -1,
			steps: []time.Duration{0}},
		{name: "continue later", follow: true, cont: 2 * time.Second, again: never, end: 0, fail: -1,
			steps: []time.Duration{2 * time.Second}},
		{name: "continue at the horizon", follow: true, cont: horizon, again: never, end: 0, fail: -1,
			steps: []time.Duration{horizon}},
		{name: "continue beyond the horizon: left to the ticks", follow: true, cont: horizon + 1, again: never, end: -1, fail: -1},
		{name: "a step asks again", follow: true, cont: 0, again: time.Second, end: -1, fail: -1,
			steps: []time.Duration{0, time.Second}},
		{name: "the job ends: what its step asked for is dropped", follow: true, cont: 0, again: 0, end: 0, fail: -1,
			steps: []time.Duration{0}},
		{name: "a step fails: reported, its own continue dropped", follow: true, cont: 0, again: 0, end: -1, fail: 0,
			steps: []time.Duration{0}, reported: 1},
		{name: "ctx ends: no step, nothing reported", follow: true, cont: time.Second, again: never, end: -1, fail: -1,
			cancel: true},
	} {
		for _, via := range []string{"Go", "Check"} {
			t.Run(via+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				start := time.Unix(0, 0)
				clk := clocktest.New(start)
				var (
					mu       sync.Mutex
					steps    []time.Duration
					reported int
					q        *Queue
				)
				q = New(Config{
					Now: clk.Now, Sleep: clk.Skip, Checkers: 2, Horizon: horizon,
					Step: func(ctx context.Context, id int64) (bool, error) {
						mu.Lock()
						k := len(steps)
						steps = append(steps, clk.Now().Sub(start))
						mu.Unlock()
						if k == 0 && tc.again != never {
							q.ContinueAt(id, clk.Now().Add(tc.again))
						}
						if k == tc.fail {
							return true, errors.New("step failed")
						}
						return k != tc.end, nil
					},
					Report: func(int64, error) { mu.Lock(); reported++; mu.Unlock() },
				})
				q.Follow(tc.follow)
				w := Work{ID: 3, Run: func(context.Context) error {
					if tc.cont != never {
						q.ContinueAt(3, clk.Now().Add(tc.cont))
					}
					if tc.cancel {
						cancel()
					}
					return nil
				}}
				if via == "Go" {
					q.Go(ctx, q.Read(), w)
				} else {
					q.Check(ctx, q.Read(), []Work{w})
				}
				q.Wait()
				if !slices.Equal(steps, tc.steps) {
					t.Errorf("steps at %v, want %v", steps, tc.steps)
				}
				if reported != tc.reported {
					t.Errorf("%d errors reported, want %d", reported, tc.reported)
				}
				if len(q.cont) != 0 {
					t.Errorf("follow-ups left behind: %v", q.cont)
				}
			})
		}
	}
}

// A job that is not claimed has no step under way to ask for a follow-up.
func TestContinueAtNeedsAClaim(t *testing.T) {
	q := New(Config{})
	q.Follow(true)
	q.ContinueAt(9, time.Now())
	if len(q.cont) != 0 {
		t.Errorf("a follow-up kept for a job not claimed: %v", q.cont)
	}
}

func TestWaitWaitsForEveryStartedWork(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(time.Unix(0, 0))
	var finished atomic.Int32
	gate := make(chan struct{})
	q := New(Config{Now: clk.Now, Sleep: clk.Skip, Checkers: 2, Horizon: time.Second,
		Step: func(context.Context, int64) (bool, error) {
			<-gate
			finished.Add(1)
			return false, nil
		},
	})
	q.Follow(true)
	work := func(id int64, cont bool) Work {
		return Work{ID: id, Run: func(context.Context) error {
			if cont {
				q.ContinueAt(id, clk.Now())
			}
			<-gate
			finished.Add(1)
			return nil
		}}
	}
	e := q.Read()
	total := int32(0)
	for id := range int64(4) {
		q.Go(ctx, e, work(id, id%2 == 0))
		total += 1 + int32(1-id%2)
	}
	var ws []Work
	for id := int64(10); id < 16; id++ {
		ws = append(ws, work(id, id%3 == 0))
		total++
		if id%3 == 0 {
			total++
		}
	}
	q.Check(ctx, e, ws)
	got := make(chan int32)
	go func() {
		q.Wait()
		got <- finished.Load()
	}()
	close(gate)
	if n := <-got; n != total {
		t.Errorf("Wait returned with %d of %d runs and steps done", n, total)
	}
	// With nothing in flight, Wait returns at once.
	q.Wait()
}
