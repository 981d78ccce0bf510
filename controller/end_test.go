package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/schema"
	"sortie/strategy"
)

// Every ending goes through strategy.Decide, and each is stored with the
// outcome class, action and texts users see in `jobs show`.
func TestEveryEndingGoesThroughDecide(t *testing.T) {
	ctx := context.Background()
	type want struct {
		outcome, action string
		reason          string // the attempt's; "" when it has none
		decision        string // a prefix of the attempt's decision
		status          lifecycle.Status
		failure         string // a prefix of the job's failure reason; "" for none
		tasks           []lifecycle.Status
	}
	for _, tc := range []struct {
		name string
		yaml string
		// end brings the job to its end and returns it.
		end  func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64
		want want
	}{
		{
			name: "cancel of a running attempt",
			yaml: "run: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				j, a := runningAttempt(t, c, cloud, yaml)
				if _, err := c.Store.RequestCancel(ctx, []int64{j.ID}); err != nil {
					t.Fatal(err)
				}
				j, _ = c.Store.Job(ctx, j.ID)
				if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return j.ID
			},
			want: want{outcome: "cancelled", action: "cancel", reason: "stopped for the cancel", decision: "cancelled by user",
				status: lifecycle.Cancelled, tasks: []lifecycle.Status{lifecycle.Cancelled}},
		},
		{
			name: "cancel before any attempt",
			yaml: "name: p\n---\nrun: a\n---\nrun: b\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				id := createJob(t, c, yaml)
				if _, err := c.Store.RequestCancel(ctx, []int64{id}); err != nil {
					t.Fatal(err)
				}
				j, _ := c.Store.Job(ctx, id)
				if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			want: want{status: lifecycle.Cancelled, tasks: []lifecycle.Status{lifecycle.Cancelled, lifecycle.Cancelled}},
		},
		{
			name: "strategy NONE ends the job at a preemption",
			yaml: "resources: {job_recovery: none}\nrun: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				j, a := runningAttempt(t, c, cloud, yaml)
				cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
				if err := c.reconcile(ctx, j, a, c.snapshot(ctx, []*store.Attempt{a})); err != nil {
					t.Fatal(err)
				}
				return j.ID
			},
			want: want{outcome: "preempted", action: "fail", reason: "node 0 preempted in fake/r/r-a",
				decision: "preemption in r/r-a; job_recovery is NONE, not recovering", status: lifecycle.Failed,
				failure: "preemption in r/r-a; job_recovery is NONE, not recovering", tasks: []lifecycle.Status{lifecycle.Failed}},
		},
		{
			name: "max_duration stops the running attempt and ends the job FAILED",
			yaml: "resources: {job_recovery: {max_duration: 2h, max_restarts_on_errors: 3}}\nrun: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				j, a := runningAttempt(t, c, cloud, yaml)
				c.Now = func() time.Time { return j.SubmittedAt.Add(2*time.Hour - time.Second) }
				if err := c.reconcile(ctx, j, a, snapshot{failed: map[string]error{"fake": errors.New("no answer")}}); err != nil {
					t.Fatal(err)
				}
				if a, _ := c.Store.LastAttempt(ctx, j.ID, 0); a.State == lifecycle.AttemptEnded {
					t.Fatalf("attempt ended a second before max_duration: %+v", a)
				}
				c.Now = func() time.Time { return j.SubmittedAt.Add(2 * time.Hour) }
				if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return j.ID
			},
			want: want{outcome: "timed_out", action: "fail", reason: "max_duration 2h exceeded",
				decision: "max_duration 2h exceeded", status: lifecycle.Failed,
				failure: "max_duration 2h exceeded", tasks: []lifecycle.Status{lifecycle.Failed}},
		},
		{
			name: "max_duration ends a job backing off before a recovery at once",
			yaml: "resources: {job_recovery: {max_duration: 90m}}\nrun: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				j, a := runningAttempt(t, c, cloud, yaml)
				c.Now = func() time.Time { return j.SubmittedAt.Add(90*time.Minute - time.Second) }
				cloud.clusters[a.Cluster].Nodes[0].State = provision.NodePreempted
				if err := c.reconcile(ctx, j, a, c.snapshot(ctx, []*store.Attempt{a})); err != nil {
					t.Fatal(err)
				}
				j, _ = c.Store.Job(ctx, j.ID)
				if j.Status != lifecycle.Recovering || j.NextActionAt == nil {
					t.Fatalf("after the preemption: job %s, next action %v; want RECOVERING backing off", j.Status, j.NextActionAt)
				}
				c.Now = func() time.Time { return j.SubmittedAt.Add(90 * time.Minute) }
				if !c.Now().Before(*j.NextActionAt) {
					t.Fatalf("the back-off (until %s) is over by %s: the test would not test it", j.NextActionAt, c.Now())
				}
				if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return j.ID
			},
			want: want{outcome: "preempted", action: "recover", reason: "node 0 preempted in fake/r/r-a",
				decision: "preemption in r/r-a", status: lifecycle.Failed,
				failure: "max_duration 1h30m exceeded", tasks: []lifecycle.Status{lifecycle.Failed}},
		},
		{
			name: "a spec that cannot be read, on a running attempt",
			yaml: "run: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				j, a := runningAttempt(t, c, cloud, yaml)
				j.Spec = []byte(`{"tasks": [`)
				if err := c.endAttempt(ctx, j, a, ended{outcome: "succeeded", codes: []*int{new(int)}, reason: "every node exited 0"}); err != nil {
					t.Fatal(err)
				}
				return j.ID
			},
			want: want{outcome: "controller_error", action: "fail", reason: "controller error: job 1 spec:",
				decision: "controller error: job 1 spec:", status: lifecycle.FailedController, failure: "controller error: job 1 spec:",
				tasks: []lifecycle.Status{lifecycle.FailedController}},
		},
		{
			name: "a spec that cannot be read, on a launching attempt",
			yaml: "run: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				id := createJob(t, c, yaml)
				a, err := c.Store.NewAttempt(ctx, id, 0, func(n int) string { return provision.ClusterName(id, 0, n) }, nil, lifecycle.Starting)
				if err != nil {
					t.Fatal(err)
				}
				j, _ := c.Store.Job(ctx, id)
				j.Spec = []byte(`not json`)
				if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			want: want{outcome: "controller_error", action: "fail", reason: "controller error: job 1 spec:",
				decision: "controller error: job 1 spec:", status: lifecycle.FailedController, failure: "controller error: job 1 spec:",
				tasks: []lifecycle.Status{lifecycle.FailedController}},
		},
		{
			name: "a zone no provider offers fails the prechecks, and the reason says so once",
			yaml: "resources: {zone: nowhere}\nrun: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				id := createJob(t, c, yaml)
				j, _ := c.Store.Job(ctx, id)
				if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			want: want{outcome: "launch_failed", action: "fail",
				reason:   "no placement satisfies the request (zone nowhere): check resources.cloud, region, zone and infra",
				decision: "no placement satisfies the request (zone nowhere): check", status: lifecycle.FailedPrechecks,
				failure: "no placement satisfies the request (zone nowhere)", tasks: []lifecycle.Status{lifecycle.FailedPrechecks}},
		},
		{
			name: "a request no placement satisfies fails the prechecks",
			yaml: "run: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				id := createJob(t, c, yaml) // cloud local; the fake cloud offers none of it
				j, _ := c.Store.Job(ctx, id)
				if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			want: want{outcome: "launch_failed", action: "fail", reason: "no placement satisfies the request (cloud local)",
				decision: "no placement satisfies the request (cloud local)", status: lifecycle.FailedPrechecks,
				failure: "no placement satisfies the request (cloud local)", tasks: []lifecycle.Status{lifecycle.FailedPrechecks}},
		},
		{
			name: "an input gone before the start fails the prechecks",
			yaml: "secrets: {TOKEN: null}\nrun: train\n",
			end: func(t *testing.T, c *Controller, cloud *fakeCloud, yaml string) int64 {
				id := createJob(t, c, yaml)
				a, err := c.Store.NewAttempt(ctx, id, 0, func(n int) string { return provision.ClusterName(id, 0, n) }, nil, lifecycle.Starting)
				if err != nil {
					t.Fatal(err)
				}
				cl, _ := cloud.Launch(ctx, provision.ClusterSpec{Name: a.Cluster, Placement: schema.Placement{Cloud: "fake", Region: "r", Zone: "r-a"}})
				if err := c.Store.MarkLaunched(ctx, a.ID, "fake", "r", "r-a", instanceIDs(cl)); err != nil {
					t.Fatal(err)
				}
				a.Cloud, a.Region, a.Zone, a.State = "fake", "r", "r-a", lifecycle.AttemptStarting
				j, _ := c.Store.Job(ctx, id)
				if err := c.reconcile(ctx, j, a, snapshot{}); err != nil {
					t.Fatal(err)
				}
				return id
			},
			want: want{outcome: "launch_failed", action: "fail", reason: "the value of secret TOKEN was not kept at launch",
				decision: "the value of secret TOKEN was not kept at launch", status: lifecycle.FailedPrechecks,
				failure: "the value of secret TOKEN was not kept at launch", tasks: []lifecycle.Status{lifecycle.FailedPrechecks}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
			c := newTestController(t, cloud)
			id := tc.end(t, c, cloud, tc.yaml)
			j, err := c.Store.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if j.Status != w.status || !strings.HasPrefix(j.FailureReason, w.failure) || (w.failure == "") != (j.FailureReason == "") {
				t.Errorf("job %s, failure reason %q; want %s, %q...", j.Status, j.FailureReason, w.status, w.failure)
			}
			tasks, _ := c.Store.Tasks(ctx, id)
			var got []lifecycle.Status
			for _, task := range tasks {
				got = append(got, task.Status)
			}
			if fmt.Sprint(got) != fmt.Sprint(w.tasks) {
				t.Errorf("tasks %v, want %v", got, w.tasks)
			}
			as, _ := c.Store.Attempts(ctx, id)
			if w.outcome == "" {
				if len(as) != 0 {
					t.Errorf("attempts %+v, want none", as)
				}
				return
			}
			if len(as) != 1 {
				t.Fatalf("attempts %+v, want one", as)
			}
			a := as[0]
			if a.State != lifecycle.AttemptEnded || a.Outcome != w.outcome || a.Action != w.action ||
				!strings.HasPrefix(a.Reason, w.reason) || !strings.HasPrefix(a.Decision, w.decision) {
				t.Errorf("attempt %s: outcome %q action %q reason %q decision %q; want %q %q %q... %q...",
					a.State, a.Outcome, a.Action, a.Reason, a.Decision, w.outcome, w.action, w.reason, w.decision)
			}
			if a.Cloud == "" {
				return // never launched anywhere: nothing to tear down
			}
			if len(cloud.terminated) == 0 || cloud.terminated[len(cloud.terminated)-1] != a.Cluster {
				t.Errorf("cluster %s not torn down (terminated %v)", a.Cluster, cloud.terminated)
			}
		})
	}
}

func createJob(t *testing.T, c *Controller, yaml string) int64 {
	t.Helper()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	tasks := make([]store.NewTask, len(p.Tasks))
	id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: len(tasks)}, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// noCapacity offers one local placement and never has capacity there.
type noCapacity struct{ *fakeCloud }

func (noCapacity) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "local", Zone: "local-a"}}, nil
}
func (noCapacity) Launch(context.Context, provision.ClusterSpec) (*provision.Cluster, error) {
	return nil, provision.Capacity(errors.New("no capacity in local-a"))
}

func TestWaitingForCapacityIsNoError(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	c.Providers = oneCloud{noCapacity{cloud}}
	id := createJob(t, c, "run: train\n")
	j, _ := c.Store.Job(ctx, id)
	if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
		t.Fatalf("a round without capacity returned %v; it is a wait, not an error", err)
	}
	if j, _ = c.Store.Job(ctx, id); j.Status != lifecycle.Pending || !strings.Contains(j.StatusReason, "no capacity") {
		t.Errorf("job %s (%s), want PENDING waiting for capacity", j.Status, j.StatusReason)
	}
}

func TestASpecUnreadableAtTheEndKeepsTheExitCodes(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	j.Spec = []byte(`{"tasks": [`)
	three := 3
	if err := c.endAttempt(ctx, j, a, ended{outcome: strategy.UserFailure, codes: []*int{&three}, reason: "node 0 exited 3"}); err != nil {
		t.Fatal(err)
	}
	as, err := c.Store.Attempts(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if as[0].Outcome != "controller_error" || strategy.FormatExitCodes(as[0].ExitCodes) != "3" {
		t.Errorf("attempt %s with exit codes %s, want controller_error keeping 3", as[0].Outcome, strategy.FormatExitCodes(as[0].ExitCodes))
	}
	if _, err := os.Stat(home.JobLogDir(c.Config.Home, j.ID)); err != nil {
		t.Errorf("the attempt's log directory was not kept: %v", err)
	}
}

// max_recoveries counts the recoveries from preemption or node loss the
// task made, read back from its attempts: the one after the last allowed
// ends the job FAILED, naming the limit.
func TestMaxRecoveriesEndsTheJob(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "resources: {job_recovery: {max_recoveries: 1}}\nrun: train\n")
	lose := func(a *store.Attempt, state provision.NodeState) {
		t.Helper()
		cloud.clusters[a.Cluster].Nodes[0].State = state
		j, _ := c.Store.Job(ctx, j.ID)
		if err := c.reconcile(ctx, j, a, c.snapshot(ctx, []*store.Attempt{a})); err != nil {
			t.Fatal(err)
		}
	}
	lose(a, provision.NodePreempted)
	if j, _ := c.Store.Job(ctx, j.ID); j.Status != lifecycle.Recovering {
		t.Fatalf("after the first preemption: job %s (%s), want RECOVERING", j.Status, j.FailureReason)
	}
	b, err := c.Store.NewAttempt(ctx, j.ID, 0, func(n int) string { return provision.ClusterName(j.ID, 0, n) }, nil, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	cloud.clusters[b.Cluster] = &provision.Cluster{Name: b.Cluster, Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}}}
	if err := c.Store.MarkLaunched(ctx, b.ID, "fake", "r", "r-b", []string{"i-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Store.MarkRunning(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Cloud, b.Region, b.Zone, b.State = "fake", "r", "r-b", lifecycle.AttemptRunning
	lose(b, provision.NodeGone)
	j, _ = c.Store.Job(ctx, j.ID)
	want := "node lost in r/r-b; no recoveries left (max_recoveries 1)"
	if j.Status != lifecycle.Failed || j.FailureReason != want || j.RecoveryCount != 1 {
		t.Errorf("after the second loss: job %s (%q), %d recoveries; want FAILED (%q), 1 recovery", j.Status, j.FailureReason, j.RecoveryCount, want)
	}
}
