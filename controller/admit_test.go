package controller

import (
	"context"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/strategy"
)

// Under a server limit of one running job, a second job waits in
// PENDING with its place and reason, launches nothing, and is admitted
// at the first tick after the first job ends.
func TestAdmissionHoldsAJobUntilTheLimitAllows(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	one := 1
	c.Config.Limits.Server.RunningJobs = &one
	first, a := runningAttempt(t, c, cloud, "run: train\n")
	second := createJob(t, c, "run: train\n")

	tick := func() {
		t.Helper()
		if err := c.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		c.Wait()
	}
	tick()
	j, err := c.Store.Job(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	want := "waiting: the server runs 1 of 1 jobs (server limit); this job is next"
	if j.Status != lifecycle.Pending || j.AdmittedAt != nil || j.WaitReason != want || j.WaitPlace != 1 {
		t.Fatalf("second job %s admitted %v reason %q place %d, want PENDING, not admitted, %q, 1", j.Status, j.AdmittedAt, j.WaitReason, j.WaitPlace, want)
	}
	if as, _ := c.Store.Attempts(ctx, second); len(as) != 0 {
		t.Fatalf("the waiting job has %d attempts, want none", len(as))
	}

	// The first job ends: its place is free.
	cloud.clusters[a.Cluster].Nodes[0].State = provision.NodeGone
	if _, err := c.Store.RequestCancel(ctx, []int64{first.ID}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tick()
		if j, _ := c.Store.Job(ctx, first.ID); j.Status.Terminal() {
			break
		}
	}
	if j, _ := c.Store.Job(ctx, first.ID); !j.Status.Terminal() {
		t.Fatalf("first job %s, want it ended", j.Status)
	}
	tick()
	j, _ = c.Store.Job(ctx, second)
	if j.AdmittedAt == nil || j.WaitReason != "" || j.WaitPlace != 0 {
		t.Fatalf("second job admitted %v reason %q place %d, want admitted with no reason", j.AdmittedAt, j.WaitReason, j.WaitPlace)
	}
	if as, _ := c.Store.Attempts(ctx, second); len(as) == 0 {
		t.Errorf("the admitted job has no attempt")
	}
}

// Without limits no pass runs: a job starts when launched, and nothing
// is written of it.
func TestNoLimitsNoAdmission(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	id := createJob(t, c, "run: train\n")
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	j, _ := c.Store.Job(ctx, id)
	if j.AdmittedAt != nil || j.WaitReason != "" {
		t.Errorf("admitted %v reason %q, want neither", j.AdmittedAt, j.WaitReason)
	}
	if as, _ := c.Store.Attempts(ctx, id); len(as) == 0 {
		t.Errorf("no attempt: the job did not start")
	}
}

// A quota set through the server limits as config.yaml's limits do, from
// the next pass, without config.yaml limiting anything; unset, the job
// waiting for it starts at the next tick.
func TestAdmissionHoldsToStoredQuotas(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	runningAttempt(t, c, cloud, "run: train\n")
	if _, err := c.Store.SetQuota(ctx, store.Quota{Scope: store.QuotaServer, Limit: strategy.Amounts{strategy.Jobs: 1}}, "root"); err != nil {
		t.Fatal(err)
	}
	second := createJob(t, c, "run: train\n")
	tick := func() {
		t.Helper()
		if err := c.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		c.Wait()
	}
	tick()
	j, _ := c.Store.Job(ctx, second)
	want := "waiting: the server runs 1 of 1 jobs (server limit); this job is next"
	if j.AdmittedAt != nil || j.WaitReason != want {
		t.Fatalf("second job admitted %v reason %q, want it waiting: %q", j.AdmittedAt, j.WaitReason, want)
	}
	if as, _ := c.Store.Attempts(ctx, second); len(as) != 0 {
		t.Fatalf("the waiting job has %d attempts, want none", len(as))
	}
	if ok, err := c.Store.UnsetQuota(ctx, store.QuotaServer, "", "root"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	tick()
	if as, _ := c.Store.Attempts(ctx, second); len(as) == 0 {
		t.Errorf("the quota is gone but the job did not start")
	}
}

// A quota replaces config.yaml's entry of its scope: config.yaml allows
// one running job, the quota two, and the second job is admitted.
func TestStoredQuotaReplacesConfigLimit(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	one := 1
	c.Config.Limits.Server.RunningJobs = &one
	runningAttempt(t, c, cloud, "run: train\n")
	if _, err := c.Store.SetQuota(ctx, store.Quota{Scope: store.QuotaServer, Limit: strategy.Amounts{strategy.Jobs: 2}}, "root"); err != nil {
		t.Fatal(err)
	}
	second := createJob(t, c, "run: train\n")
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if j, _ := c.Store.Job(ctx, second); j.AdmittedAt == nil {
		t.Errorf("second job waits (%q), want it admitted under the quota of 2", j.WaitReason)
	}
}
