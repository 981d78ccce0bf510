package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision/local"
	"sortie/schema"
	"sortie/strategy"
)

// untilEnded steps job id, with the controller c returns, until it ends.
// The task's processes are real, so their ends are waited for.
func untilEnded(t *testing.T, id int64, c func() *Controller) *store.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		j, _ := step(t, c(), id)
		if j.Status.Terminal() {
			return j
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the job did not end within 30s")
	return nil
}

// A task that exits 137 below 32 GB escalates once to a new cluster that
// asks for twice the memory (seen by the task in SORTIE_MEMORY_GB), and
// succeeds there. The size is in the store: the controller that launches
// the bigger attempt is a new one, as after a crash.
func TestEscalationLaunchesABiggerAttempt(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "resources: {cloud: local, memory: 16+, job_recovery: {max_restarts_on_errors: 2, recover_on_exit_codes: [137],\n"+
		"  escalate: {on_exit_codes: [137], memory: 2x, max_memory: 64}}}\n"+
		"run: echo \"memory $SORTIE_MEMORY_GB\"; if [ \"$SORTIE_MEMORY_GB\" -lt 32 ]; then exit 137; fi\n")
	current := c
	j := untilEnded(t, id, func() *Controller {
		if as, _ := current.Store.Attempts(ctx, id); len(as) == 1 && as[0].State == lifecycle.AttemptEnded {
			current = restarted(t, current)
		}
		return current
	})
	if j.Status != lifecycle.Succeeded {
		t.Fatalf("job %s (%q), want SUCCEEDED", j.Status, j.FailureReason)
	}
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 {
		t.Fatalf("%d attempts, want 2", len(as))
	}
	first, second := as[0], as[1]
	if first.Action != string(strategy.Escalate) || first.Decision != "exit code 137: memory 16 → 32 GB; restart 1/2 on errors" || first.Size != nil {
		t.Errorf("first attempt: action %s, decision %q, size %+v; want escalate, the sizes, the task's own size", first.Action, first.Decision, first.Size)
	}
	if diff := cmp.Diff(&strategy.Size{Memory: "32+"}, second.Size); diff != "" {
		t.Errorf("second attempt's size (-want +got):\n%s", diff)
	}
	if second.Cluster == first.Cluster || second.Outcome != string(strategy.Succeeded) {
		t.Errorf("second attempt on %s (%s); want a new cluster, succeeded", second.Cluster, second.Outcome)
	}
	if j.RestartsOnErrors != 1 || j.RecoveryCount != 0 {
		t.Errorf("counters: %d restarts on errors, %d recoveries; want 1, 0 (an escalation is a restart on error)", j.RestartsOnErrors, j.RecoveryCount)
	}
	// The small cluster was torn down, not kept for a restart.
	cls, _ := local.New(local.Config{Home: c.Config.Home}).List(ctx)
	for _, cl := range cls {
		if cl.Name == first.Cluster {
			t.Errorf("the first attempt's cluster %s is still up", cl.Name)
		}
	}
}

// At the top of its escalation a failure ends the job FAILED, saying so,
// and the known failure records the size it failed at.
func TestEscalationEndsAtTheTop(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	p, err := schema.Parse([]byte("resources: {cloud: local, memory: 16, job_recovery: {max_restarts_on_errors: 5,\n"+
		"  escalate: {on_exit_codes: [137], memory: 2x, max_memory: 32}}}\nrun: exit 137\n"), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: b, NumTasks: 1, InputKey: "k-escalated"}, make([]store.NewTask, 1))
	if err != nil {
		t.Fatal(err)
	}
	j := untilEnded(t, id, func() *Controller { return c })
	want := "exit code 137 matched escalate.on_exit_codes [137], but nothing bigger is left (memory 32 GB is max_memory)"
	if j.Status != lifecycle.Failed || j.FailureReason != want {
		t.Fatalf("job %s (%q), want FAILED (%q)", j.Status, j.FailureReason, want)
	}
	f, err := c.Store.KnownFailure(ctx, "k-escalated")
	if err != nil || f == nil {
		t.Fatalf("known failure: %+v, %v", f, err)
	}
	if diff := cmp.Diff(&strategy.Size{Memory: "32"}, f.Size); diff != "" {
		t.Errorf("the known failure's size (-want +got):\n%s", diff)
	}
}
