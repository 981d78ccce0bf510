package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// preemptConfig limits the server to one running job and lets a job of
// higher priority preempt.
const preemptConfig = "local:\n  sandbox: \"off\"\nlimits:\n  server: {running_jobs: 1}\n  preemption: lower_priority\n"

// trapTERM is a task that says when it gets SIGTERM and exits 143 then.
const trapTERM = "resources: {cloud: local, job_recovery: {max_restarts_on_errors: 0, max_recoveries: 1}}\n" +
	"run: trap 'echo got TERM; exit 143' TERM; touch \"$SORTIE_NODE_DIR/trapped\"; sleep 300 & wait\n"

// createJobAt stores a job of yaml at priority.
func createJobAt(t *testing.T, c *Controller, yaml string, priority int) int64 {
	t.Helper()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: len(p.Tasks), Priority: priority,
		Ask: store.FormatAsk(strategy.AskOf(p))}, make([]store.NewTask, len(p.Tasks)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// lowRunning starts a priority-100 job that traps SIGTERM under the
// limit, and launches a priority-900 job beside it: the admission pass
// asks the low one to yield.
func lowRunning(t *testing.T, c *Controller) (low, high int64, a *store.Attempt) {
	t.Helper()
	ctx := context.Background()
	low = createJobAt(t, c, trapTERM, 100)
	c.admit(ctx)
	a = untilRunning(t, c, low)
	for _, r := range runners(t, c, a) {
		waitFor(t, r, "the task running", running)
		waitFile(t, filepath.Join(r.Dir(), "trapped"))
	}
	high = createJobAt(t, c, "resources: {cloud: local}\nrun: echo high\n", 900)
	c.admit(ctx)
	h, _ := c.Store.Job(ctx, high)
	want := fmt.Sprintf("waiting: preempting job %d (priority 100) for room under the server limit", low)
	if h.AdmittedAt != nil || h.WaitReason != want {
		t.Fatalf("high job admitted %v, waits with %q; want it waiting with %q", h.AdmittedAt, h.WaitReason, want)
	}
	if j, _ := c.Store.Job(ctx, low); j.YieldFor == nil || *j.YieldFor != high {
		t.Fatalf("low job yield_for %v, want %d", j.YieldFor, high)
	}
	return low, high, a
}

// checkRequeued checks that the low job was stopped gracefully, its
// attempt recorded as preempted by priority, its cluster torn down, and
// that it waits again with its budgets untouched.
func checkRequeued(t *testing.T, c *Controller, low, high int64, a *store.Attempt) {
	t.Helper()
	ctx := context.Background()
	j, _ := c.Store.Job(ctx, low)
	reason := fmt.Sprintf("preempted by priority: job %d (priority 900) takes its place under the server limit", high)
	if j.Status != lifecycle.Pending || j.AdmittedAt != nil || j.YieldFor != nil || j.StatusReason != reason ||
		j.RestartsOnErrors != 0 || j.RecoveryCount != 0 {
		t.Fatalf("low job %s admitted %v yield %v reason %q restarts %d recoveries %d; want PENDING, waiting, %q, no counts",
			j.Status, j.AdmittedAt, j.YieldFor, j.StatusReason, j.RestartsOnErrors, j.RecoveryCount, reason)
	}
	as, _ := c.Store.Attempts(ctx, low)
	if len(as) != 1 || as[0].Outcome != string(strategy.PreemptedByPriority) || as[0].Action != string(strategy.Requeue) ||
		as[0].Reason != reason || as[0].Decision != reason {
		t.Fatalf("attempts %+v, want one preempted_by_priority, requeue, %q", as, reason)
	}
	if len(as[0].ExitCodes) != 1 || as[0].ExitCodes[0] == nil || *as[0].ExitCodes[0] != 143 {
		t.Errorf("exit codes %v, want 143: what the task did with its SIGTERM", strategy.FormatExitCodes(as[0].ExitCodes))
	}
	b, err := os.ReadFile(home.NodeLog(c.Config.Home, low, 0, 1, 0))
	if err != nil || !strings.Contains(string(b), "got TERM") {
		t.Errorf("node log %q (%v): the task never saw SIGTERM", b, err)
	}
	if _, cl, err := c.cluster(ctx, a); err != nil || (cl != nil && !allTerminated(cl)) {
		t.Errorf("cluster %s still up (%+v, %v), want it torn down", a.Cluster, cl, err)
	}
}

// A priority-900 job displaces a priority-100 one under a server limit of
// one running job: the low one gets SIGTERM, its attempt ends preempted
// by priority, it waits again without spending max_restarts_on_errors or
// max_recoveries; the high one runs, and once it has ended the low one is
// admitted again and runs a second attempt.
func TestPreemptionRequeuesTheLowerJob(t *testing.T) {
	ctx := context.Background()
	c := localControllerWith(t, preemptConfig)
	low, high, a := lowRunning(t, c)
	step(t, c, low)
	checkRequeued(t, c, low, high, a)

	c.admit(ctx)
	if h, _ := c.Store.Job(ctx, high); h.AdmittedAt == nil {
		t.Fatalf("high job not admitted once the low one stopped: %q", h.WaitReason)
	}
	if j, _ := c.Store.Job(ctx, low); j.WaitReason != "waiting: the server runs 1 of 1 jobs (server limit); this job is next" {
		t.Errorf("low job waits with %q", j.WaitReason)
	}
	untilEndedAs(t, c, high, lifecycle.Succeeded)
	c.admit(ctx)
	a2 := untilRunning(t, c, low)
	if a2.Attempt != 2 {
		t.Errorf("low job runs attempt %d, want 2", a2.Attempt)
	}
	if j, _ := c.Store.Job(ctx, low); j.Status != lifecycle.Running || j.RestartsOnErrors != 0 || j.RecoveryCount != 0 {
		t.Errorf("low job %s restarts %d recoveries %d, want RUNNING with no counts", j.Status, j.RestartsOnErrors, j.RecoveryCount)
	}
}

// A controller killed in the middle of a preemption (the nodes stopped,
// the end not yet recorded) loses nothing: the request is in the store,
// and the next controller finishes the stop and requeues the job.
func TestPreemptionGoesOnAfterACrash(t *testing.T) {
	ctx := context.Background()
	c := localControllerWith(t, preemptConfig)
	low, high, a := lowRunning(t, c)
	kill, killed := context.WithCancel(ctx)
	c.Pause = func(point string, job int64, _ int) {
		if point == PauseEnding && job == low {
			killed()
		}
	}
	j, _ := c.Store.Job(ctx, low)
	if err := c.reconcile(kill, j, a, c.snapshot(ctx, []*store.Attempt{a})); err == nil {
		t.Fatal("the step killed before recording the end says nothing of it")
	}
	if j, _ := c.Store.Job(ctx, low); j.Status != lifecycle.Running || j.YieldFor == nil {
		t.Fatalf("after the kill: %s yield %v, want RUNNING and still asked to yield", j.Status, j.YieldFor)
	}
	step(t, restarted(t, c), low)
	checkRequeued(t, c, low, high, a)
}

// Without limits.preemption nobody is preempted: the high job waits.
func TestNoPreemptionByDefault(t *testing.T) {
	ctx := context.Background()
	c := localControllerWith(t, "local:\n  sandbox: \"off\"\nlimits:\n  server: {running_jobs: 1}\n")
	low := createJobAt(t, c, trapTERM, 100)
	c.admit(ctx)
	untilRunning(t, c, low)
	high := createJobAt(t, c, "resources: {cloud: local}\nrun: echo high\n", 900)
	c.admit(ctx)
	step(t, c, low)
	if j, _ := c.Store.Job(ctx, low); j.Status != lifecycle.Running || j.YieldFor != nil {
		t.Errorf("low job %s yield %v, want RUNNING, not asked", j.Status, j.YieldFor)
	}
	if h, _ := c.Store.Job(ctx, high); h.AdmittedAt != nil || h.WaitReason != "waiting: the server runs 1 of 1 jobs (server limit); this job is next" {
		t.Errorf("high job admitted %v reason %q, want it waiting for the limit", h.AdmittedAt, h.WaitReason)
	}
}

// untilEndedAs steps job id until it ends with want.
func untilEndedAs(t *testing.T, c *Controller, id int64, want lifecycle.Status) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, _ := step(t, c, id)
		if j.Status.Terminal() {
			if j.Status != want {
				t.Fatalf("job %d %s (%s), want %s", id, j.Status, j.FailureReason, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %s after 20s", id, j.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
