package controller

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/sim"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

// replicaPair is two replicas of one store, a and b, driving one
// simulated cloud on one fake clock.
type replicaPair struct {
	a, b *Controller
	clk  *clocktest.Clock
	path string
}

func newReplicaPair(t *testing.T) replicaPair {
	t.Helper()
	home := t.TempDir()
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hollow := sim.New(sim.Config{RunTime: 3 * time.Second, Now: clk.Now})
	cfg, err := config.Load(home, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "state.db")
	mk := func(name string) *Controller {
		st, err := store.Open(context.Background(), path, clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c := New(st, cfg, oneCloud{hollow}, slog.New(slog.NewTextHandler(testWriter{t, name}, nil)))
		c.Now, c.sched.Sleep = clk.Now, clk.Skip
		c.Rand = func() float64 { return 0 }
		if err := c.AsReplica(ReplicaOptions{Name: name, TTL: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	return replicaPair{a: mk("a"), b: mk("b"), clk: clk, path: path}
}

func simJobs(t *testing.T, c *Controller, n int) []int64 {
	t.Helper()
	p, err := schema.Parse([]byte("resources: {cloud: sim}\nrun: train\n"), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	var ids []int64
	for range n {
		id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func tickAndWait(t *testing.T, c *Controller) {
	t.Helper()
	if err := c.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Wait()
}

func sorted(ids []int64) []int64 { slices.Sort(ids); return ids }

// Two replicas share the jobs half and half and each drives only its own;
// when one stops renewing (killed), the other takes its jobs once their
// leases expire and finishes them, every job with one attempt. The one
// that stopped, should it wake up, changes nothing and learns at its next
// renewal that it holds nothing.
func TestReplicasShareAndTakeOver(t *testing.T) {
	ctx := context.Background()
	r := newReplicaPair(t)
	if err := r.a.register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.b.register(ctx); err != nil {
		t.Fatal(err)
	}
	ids := simJobs(t, r.a, 6)
	for _, c := range []*Controller{r.a, r.b} {
		if _, err := c.claim(ctx); err != nil {
			t.Fatal(err)
		}
	}
	heldA, heldB := sorted(r.a.Held()), sorted(r.b.Held())
	if len(heldA) != 3 || len(heldB) != 3 {
		t.Fatalf("fair share of 6 jobs over 2 replicas: a holds %v, b holds %v", heldA, heldB)
	}

	// a drives its jobs only: b's get no attempt.
	tickAndWait(t, r.a)
	for _, id := range ids {
		as, err := r.a.Store.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if mine := slices.Contains(heldA, id); mine != (len(as) == 1) {
			t.Fatalf("job %d (held by a: %v) has %d attempts after a's tick", id, mine, len(as))
		}
	}

	before := map[int64][]*store.Attempt{}
	for _, id := range heldA {
		before[id], _ = r.a.Store.Attempts(ctx, id)
	}

	// a is killed: it renews no more. Within the TTL b claims nothing.
	r.clk.Advance(5 * time.Second)
	r.b.renew(ctx)
	if got, err := r.b.claim(ctx); err != nil || len(got) != 0 {
		t.Fatalf("b claimed %v (%v) while a's leases were live", got, err)
	}
	r.clk.Advance(6 * time.Second)
	r.b.renew(ctx)
	got, err := r.b.claim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sorted(got); !slices.Equal(diff, heldA) {
		t.Fatalf("b took over %v, want a's jobs %v", diff, heldA)
	}

	// a wakes up before it renews. Its ticks read only the jobs the store
	// says it holds: none.
	tickAndWait(t, r.a)
	if h := r.a.Held(); len(h) != 3 {
		t.Fatalf("a's tick changed its leases in memory: %v", h)
	}
	// A step of a's already under way when it paused goes on: every write
	// it tries is refused, and a drops the lease.
	for _, id := range heldA {
		if _, err := r.a.leasedStep(ctx, id); err != nil {
			t.Fatalf("a's stale step of job %d: %v", id, err)
		}
	}
	for _, id := range heldA {
		as, _ := r.a.Store.Attempts(ctx, id)
		if len(as) != 1 || as[0].State != before[id][0].State || as[0].State == lifecycle.AttemptEnded {
			t.Fatalf("job %d after the stale replica's tick: %+v, before it %+v", id, as, before[id])
		}
	}
	if h := r.a.Held(); len(h) != 0 {
		t.Errorf("a still holds %v after its writes were refused", h)
	}
	r.a.renew(ctx)
	if h := r.a.Held(); len(h) != 0 {
		t.Fatalf("a holds %v after its renewal", h)
	}

	// b finishes every job, each with the one attempt it had.
	for range 20 {
		tickAndWait(t, r.b)
		r.clk.Advance(time.Second)
		r.b.renew(ctx)
	}
	for _, id := range ids {
		j, err := r.b.Store.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		as, _ := r.b.Store.Attempts(ctx, id)
		if j.Status != lifecycle.Succeeded || len(as) != 1 {
			t.Errorf("job %d is %s (%s) with %d attempts, want SUCCEEDED with 1", id, j.Status, j.StatusReason, len(as))
		}
	}
	rs, err := r.b.Store.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("replicas: %+v", rs)
	}
	// A graceful stop removes the replica.
	r.b.release()
	if rs, _ := r.b.Store.Replicas(ctx); len(rs) != 1 || rs[0].Name != "a" {
		t.Fatalf("replicas after b's release: %+v", rs)
	}
}

// A renewal that fails for as long as the leases may have lasted stops the
// replica driving any job.
func TestFailedRenewalsDropTheLeases(t *testing.T) {
	ctx := context.Background()
	r := newReplicaPair(t)
	if err := r.a.register(ctx); err != nil {
		t.Fatal(err)
	}
	simJobs(t, r.a, 2)
	if _, err := r.a.claim(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.a.Held()) != 2 {
		t.Fatalf("a holds %v", r.a.Held())
	}
	r.a.Store.Close() // every renewal now fails
	r.clk.Advance(4 * time.Second)
	r.a.renew(ctx)
	if len(r.a.Held()) != 2 {
		t.Fatalf("one failed renewal 4s after the last dropped the leases: %v", r.a.Held())
	}
	r.clk.Advance(3 * time.Second)
	r.a.renew(ctx)
	if h := r.a.Held(); len(h) != 0 {
		t.Fatalf("renewals failing for 7s of a 10s TTL: a still holds %v", h)
	}
}

func TestClaimCount(t *testing.T) {
	for _, tc := range []struct {
		load store.LeaseLoad
		want int
	}{
		{store.LeaseLoad{Active: 3000, Claimable: 3000, Live: 3}, claimBatch},
		{store.LeaseLoad{Active: 300, Claimable: 300, Live: 3}, 100},
		{store.LeaseLoad{Active: 301, Claimable: 1, Held: 100, Live: 3}, 1},
		{store.LeaseLoad{Active: 300, Claimable: 100, Held: 100, Live: 3}, 0},
		// A dead replica's jobs, once it no longer counts as live.
		{store.LeaseLoad{Active: 300, Claimable: 150, Held: 150, Live: 1}, 150},
		{store.LeaseLoad{Active: 10, Claimable: 10, Live: 0}, 10},
		{store.LeaseLoad{Active: 10, Claimable: 0, Live: 1}, 0},
	} {
		if got := claimCount(tc.load); got != tc.want {
			t.Errorf("claimCount(%+v) = %d, want %d", tc.load, got, tc.want)
		}
	}
}

func TestAsReplicaRefusesBadOptions(t *testing.T) {
	c := &Controller{}
	if err := c.AsReplica(ReplicaOptions{}); err == nil {
		t.Error("an empty name was accepted")
	}
	if err := c.AsReplica(ReplicaOptions{Name: "a", TTL: time.Second}); err == nil {
		t.Error("a 1s TTL was accepted")
	}
}

type testWriter struct {
	t    *testing.T
	name string
}

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(w.name, string(b)); return len(b), nil }

// The controller of a home refuses to start while live replicas drive its
// store: it would drive their jobs beside them.
func TestServeRefusesBesideReplicas(t *testing.T) {
	ctx := context.Background()
	h := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(h, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RegisterReplica(ctx, store.Replica{ID: "r1-x", Name: "r1", Host: "h", PID: 9, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	err = Serve(ctx, h, slog.New(slog.NewTextHandler(testWriter{t, "serve"}, nil)), nil)
	if err == nil || !strings.Contains(err.Error(), "replicas r1 drive the jobs of this store") {
		t.Fatalf("Serve beside a live replica: %v", err)
	}
}

// A renewal that read the store before a claim neither forgets the jobs
// that claim took nor puts back an older generation of a job claimed
// again meanwhile.
func TestARenewalKeepsLeasesClaimedWhileItRan(t *testing.T) {
	ls := &leaseSet{held: map[int64]*heldLease{}}
	ls.add([]store.Lease{{Job: 1, Gen: 1}, {Job: 3, Gen: 1}})
	ls.mu.Lock()
	before := ls.claims
	ls.mu.Unlock()
	// The renewal reads the store: jobs 1 and 3 at generation 1. Then a
	// claim takes job 2, and job 3 again (its lease had expired).
	ls.add([]store.Lease{{Job: 2, Gen: 1}, {Job: 3, Gen: 2}})
	old3 := ls.held[3].ctx
	ls.keep([]store.Lease{{Job: 1, Gen: 1}, {Job: 3, Gen: 1}}, time.Now(), before)
	got := map[int64]int64{}
	for id, h := range ls.held {
		got[id] = h.lease.Gen
	}
	if want := map[int64]int64{1: 1, 2: 1, 3: 2}; !maps.Equal(got, want) {
		t.Fatalf("leases after the renewal: %v, want %v", got, want)
	}
	if old3.Err() != nil {
		t.Errorf("the steps of job 3 under its new lease were stopped")
	}
	// The next renewal, which read the store after the claim, drops a job
	// it does not return.
	ls.mu.Lock()
	now := ls.claims
	ls.mu.Unlock()
	ls.keep([]store.Lease{{Job: 1, Gen: 1}, {Job: 3, Gen: 2}}, time.Now(), now)
	if _, ok := ls.held[2]; ok || len(ls.held) != 2 {
		t.Fatalf("leases after a renewal without job 2: %v", ls.held)
	}
}
