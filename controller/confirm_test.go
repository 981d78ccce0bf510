package controller

import (
	"context"
	"strings"
	"testing"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// confirmJob runs a task with inputs key to its end on local, and returns
// the job and its attempts.
func confirmJob(t *testing.T, c *Controller, key, yaml string) (*store.Job, []*store.Attempt) {
	t.Helper()
	ctx := context.Background()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Marshal()
	id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: b, NumTasks: 1, InputKey: key}, make([]store.NewTask, 1))
	if err != nil {
		t.Fatal(err)
	}
	j := untilEnded(t, id, func() *Controller { return c })
	as, err := c.Store.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j, as
}

// A task that fails the same way twice, in two zones, is a deterministic
// known failure with both attempts as its evidence; the confirmation ran
// in the other zone.
func TestConfirmDeterministic(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	j, as := confirmJob(t, c, "k-det", "resources: {cloud: local, job_recovery: {confirm_failures: 1}}\nrun: exit 3\n")
	if j.Status != lifecycle.Failed || !strings.HasPrefix(j.FailureReason, "deterministic: exit 3 twice (local/local-a, then local/local-b)") {
		t.Fatalf("job %s (%q), want FAILED, deterministic", j.Status, j.FailureReason)
	}
	if len(as) != 2 || as[0].Zone == as[1].Zone || as[0].Action != string(strategy.Recover) ||
		as[0].Decision != "confirming failure: exit code 3 in local/local-a; run again on local/local-b" {
		t.Fatalf("attempts: %d, first %+v", len(as), as[0])
	}
	f, err := c.Store.KnownFailure(ctx, "k-det")
	if err != nil || f == nil || f.Verdict != strategy.Deterministic || len(f.Evidence) != 2 {
		t.Fatalf("known failure: %+v %v", f, err)
	}
	if j.RestartsOnErrors != 1 {
		t.Errorf("restarts on errors %d; want 1 (the confirmation is not a restart on error)", j.RestartsOnErrors)
	}
}

// A task that fails on its first attempt only is flaky: the job succeeds
// on the confirmation run, and its inputs are no known failure.
func TestConfirmFlaky(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	j, as := confirmJob(t, c, "k-flaky", "resources: {cloud: local, job_recovery: {confirm_failures: 1}}\n"+
		"run: if [ \"$SORTIE_ATTEMPT\" = 1 ]; then exit 3; fi\n")
	if j.Status != lifecycle.Succeeded || len(as) != 2 {
		t.Fatalf("job %s (%q), %d attempts; want SUCCEEDED after 2", j.Status, j.FailureReason, len(as))
	}
	if !strings.HasPrefix(as[1].Decision, "flaky: exit 3 then 0") {
		t.Errorf("confirming attempt's decision %q; want flaky", as[1].Decision)
	}
	if f, _ := c.Store.KnownFailure(ctx, "k-flaky"); f != nil {
		t.Errorf("flaky inputs recorded as a known failure: %+v", f)
	}
	if n, runs, _ := c.Store.FlakyRuns(ctx, "k-flaky"); n != 1 || runs != 1 {
		t.Errorf("flaky %d of %d runs; want 1 of 1", n, runs)
	}
}

// Without confirm_failures a failure is a known failure at once, as it
// always was.
func TestConfirmOff(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	j, as := confirmJob(t, c, "k-off", "resources: {cloud: local}\nrun: exit 3\n")
	if j.Status != lifecycle.Failed || len(as) != 1 {
		t.Fatalf("job %s, %d attempts; want FAILED after 1", j.Status, len(as))
	}
	if f, _ := c.Store.KnownFailure(ctx, "k-off"); f == nil || f.Verdict != "" {
		t.Errorf("known failure %+v; want one, unconfirmed", f)
	}
}

// With confirm_counts_as_restart the one restart on error is the
// confirmation: it is counted, and runs in the other zone.
func TestConfirmCountsAsRestart(t *testing.T) {
	c := localController(t)
	j, as := confirmJob(t, c, "k-counted", "resources: {cloud: local, job_recovery: {max_restarts_on_errors: 1, confirm_failures: 1, confirm_counts_as_restart: true}}\n"+
		"run: exit 3\n")
	if j.Status != lifecycle.Failed || len(as) != 2 || as[0].Zone == as[1].Zone {
		t.Fatalf("job %s (%q), %d attempts; want FAILED after 2 in two zones", j.Status, j.FailureReason, len(as))
	}
	if as[0].Decision != "confirming failure: exit code 3 (restart 1 on errors) in local/local-a; run again on local/local-b" {
		t.Errorf("first attempt's decision %q", as[0].Decision)
	}
	if j.RestartsOnErrors != 1 || !strings.HasPrefix(j.FailureReason, "deterministic: exit 3 twice") {
		t.Errorf("restarts on errors %d, failure %q; want 1, deterministic", j.RestartsOnErrors, j.FailureReason)
	}
}
