package controller

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/strategy"
)

// failAttempt ends j's running attempt a with exit code code, as observed.
func failAttempt(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt, code int) *store.Attempt {
	t.Helper()
	ctx := context.Background()
	if err := c.judge(ctx, j, a, cloud, cloud.clusters[a.Cluster], []node.Status{{Started: true, Done: true, Phase: node.PhaseRun, ExitCode: code}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Store.LastAttempt(ctx, j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAFailedJobKeepsItsClusterUntilItsTime(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	start := c.Now()
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {keep_on_failure: 30m}}\nrun: train\n")
	a = failAttempt(t, c, cloud, j, a, 1)
	if got, _ := c.Store.Job(ctx, j.ID); got.Status != lifecycle.Failed {
		t.Fatalf("job %s, want FAILED", got.Status)
	}
	if a.KeptUntil == nil || !a.KeptUntil.Equal(start.Add(30*time.Minute)) {
		t.Fatalf("kept until %v, want %v", a.KeptUntil, start.Add(30*time.Minute))
	}
	if len(cloud.terminated) != 0 {
		t.Fatalf("terminated %v at the failure; want the cluster kept", cloud.terminated)
	}

	// A second before its time, neither the sweep nor the release takes it.
	c.Now = func() time.Time { return start.Add(30*time.Minute - time.Second) }
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cloud.terminated) != 0 {
		t.Fatalf("the sweep terminated %v before its time", cloud.terminated)
	}
	// At its time the sweep reaps it, and the store says why.
	c.Now = func() time.Time { return start.Add(30 * time.Minute) }
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	// (The fake cloud lists a terminated cluster still, so the sweep
	// terminates it again after the release did: idempotent.)
	if !slices.Equal(slices.Compact(cloud.terminated), []string{a.Cluster}) {
		t.Fatalf("terminated %v at its time, want %s", cloud.terminated, a.Cluster)
	}
	a, _ = c.Store.LastAttempt(ctx, j.ID, 0)
	if a.ReleasedAt == nil || a.ReleasedReason != strategy.ReleasedExpired {
		t.Errorf("released at %v for %q, want now for %q", a.ReleasedAt, a.ReleasedReason, strategy.ReleasedExpired)
	}
	if kept, _ := c.Store.KeptAttempts(ctx); len(kept) != 0 {
		t.Errorf("still kept after the release: %+v", kept[0])
	}
}

func TestReleaseKeptAtItsTimeWithoutTheSweep(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	start := c.Now()
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {keep_on_failure: 10m}}\nrun: train\n")
	failAttempt(t, c, cloud, j, a, 2)
	c.Now = func() time.Time { return start.Add(9 * time.Minute) }
	if err := c.ReleaseKept(ctx); err != nil || len(cloud.terminated) != 0 {
		t.Fatalf("ReleaseKept before its time: %v, terminated %v", err, cloud.terminated)
	}
	c.Now = func() time.Time { return start.Add(11 * time.Minute) }
	if err := c.ReleaseKept(ctx); err != nil || !slices.Equal(cloud.terminated, []string{a.Cluster}) {
		t.Fatalf("ReleaseKept after its time: %v, terminated %v", err, cloud.terminated)
	}
	// Released once: a second pass tears nothing down again.
	if err := c.ReleaseKept(ctx); err != nil || len(cloud.terminated) != 1 {
		t.Errorf("second pass: %v, terminated %v", err, cloud.terminated)
	}
}

func TestReleaseRequestTearsTheKeptClusterDownAtOnce(t *testing.T) {
	for _, why := range []string{strategy.ReleasedByUser, strategy.ReleasedByCancel} {
		ctx := context.Background()
		cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
		c := newTestController(t, cloud)
		j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {keep_on_failure: 2h}}\nrun: train\n")
		failAttempt(t, c, cloud, j, a, 1)
		if _, err := c.Store.RequestRelease(ctx, j.ID, why); err != nil {
			t.Fatal(err)
		}
		// The sweep no longer counts it live either.
		live, err := c.Store.LiveClusters(ctx, c.Now())
		if err != nil || live[a.Cluster] {
			t.Fatalf("%s: live %v (%v), want the released cluster not live", why, live, err)
		}
		if err := c.ReleaseKept(ctx); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cloud.terminated, []string{a.Cluster}) {
			t.Errorf("%s: terminated %v, want %s at once", why, cloud.terminated, a.Cluster)
		}
		got, _ := c.Store.LastAttempt(ctx, j.ID, 0)
		if got.ReleasedAt == nil || got.ReleasedReason != why {
			t.Errorf("released at %v for %q, want %q", got.ReleasedAt, got.ReleasedReason, why)
		}
	}
}

// What is not a failure of the task's own, or asks for no keep, is torn
// down when the job ends, as before.
func TestOnlyAFailureWithKeepOnFailureKeepsTheCluster(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		yaml string
		end  func(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt)
	}{
		{"a failure without keep_on_failure", "run: train\n", func(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt) {
			failAttempt(t, c, cloud, j, a, 1)
		}},
		{"a success", "resources: {job_recovery: {keep_on_failure: 1h}}\nrun: train\n", func(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt) {
			failAttempt(t, c, cloud, j, a, 0)
		}},
		{"a cancel", "resources: {job_recovery: {keep_on_failure: 1h}}\nrun: train\n", func(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt) {
			if _, err := c.Store.RequestCancel(ctx, []int64{j.ID}); err != nil {
				t.Fatal(err)
			}
			j, _ = c.Store.Job(ctx, j.ID)
			if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a preemption that strategy NONE ends", "resources: {job_recovery: {strategy: none, keep_on_failure: 1h}}\nrun: train\n",
			func(t *testing.T, c *Controller, cloud *fakeCloud, j *store.Job, a *store.Attempt) {
				cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
				if err := c.reconcile(ctx, j, a, c.snapshot(ctx, []*store.Attempt{a})); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			j, a := runningAttempt(t, c, cloud, tc.yaml)
			tc.end(t, c, cloud, j, a)
			got, _ := c.Store.Job(ctx, j.ID)
			if !got.Status.Terminal() {
				t.Fatalf("job %s, want it ended", got.Status)
			}
			if last, _ := c.Store.LastAttempt(ctx, j.ID, 0); last.KeptUntil != nil {
				t.Errorf("kept until %v, want not kept", last.KeptUntil)
			}
			if !slices.Contains(cloud.terminated, a.Cluster) {
				t.Errorf("terminated %v, want %s torn down at the end", cloud.terminated, a.Cluster)
			}
		})
	}
}

// max_duration stopping a running task fails the job: its cluster is
// kept like any failure's, though the ending itself needs no policy.
func TestATimedOutJobKeepsItsCluster(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {max_duration: 1h, keep_on_failure: 15m}}\nrun: train\n")
	end := j.SubmittedAt.Add(time.Hour)
	c.Now = func() time.Time { return end }
	if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
		t.Fatal(err)
	}
	last, _ := c.Store.LastAttempt(ctx, j.ID, 0)
	if last.Outcome != string(strategy.TimedOut) || last.KeptUntil == nil || !last.KeptUntil.Equal(end.Add(15*time.Minute)) {
		t.Errorf("outcome %s kept until %v, want timed_out kept until %v", last.Outcome, last.KeptUntil, end.Add(15*time.Minute))
	}
	if len(cloud.terminated) != 0 {
		t.Errorf("terminated %v, want it kept", cloud.terminated)
	}
}

// A controller killed after the failure was recorded (the kept-until with
// it) finds the cluster kept: the restarted one's sweep leaves it until
// its time and reaps it then.
func TestARestartedControllerHonoursTheKeep(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	old := newTestController(t, cloud)
	start := old.Now()
	j, a := runningAttempt(t, old, cloud, "resources: {job_recovery: {keep_on_failure: 1h}}\nrun: train\n")
	failAttempt(t, old, cloud, j, a, 1)

	c := New(old.Store, old.Config, oneCloud{cloud}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Now = func() time.Time { return start.Add(59 * time.Minute) }
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cloud.terminated) != 0 {
		t.Fatalf("the restarted controller's sweep terminated %v before its time", cloud.terminated)
	}
	c.Now = func() time.Time { return start.Add(61 * time.Minute) }
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Compact(cloud.terminated), []string{a.Cluster}) {
		t.Errorf("terminated %v after its time, want %s", cloud.terminated, a.Cluster)
	}
}

// A controller killed after marking a kept cluster released, before
// tearing it down, leaves an orphan: the next sweep reaps it.
func TestAReleaseCutShortIsFinishedByTheSweep(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {keep_on_failure: 1h}}\nrun: train\n")
	a = failAttempt(t, c, cloud, j, a, 1)
	if ok, err := c.Store.MarkReleased(ctx, a.ID, strategy.ReleasedByUser); err != nil || !ok {
		t.Fatalf("MarkReleased: %v %v", ok, err)
	}
	if err := c.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cloud.terminated, []string{a.Cluster}) {
		t.Errorf("terminated %v, want the released cluster reaped", cloud.terminated)
	}
}
