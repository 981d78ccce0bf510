package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

func TestConfirmations(t *testing.T) { onEach(t, testConfirmations) }

// confirmedJob runs a job with inputs key whose first attempt fails with
// exit 3 in local-a and is run again, the second ending as second says.
func confirmedJob(t *testing.T, s *Store, key string, second Observed, kind strategy.VerdictKind, d strategy.Decision) int64 {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(`{}`), InputKey: key}, []NewTask{{Name: "t0"}})
	if err != nil {
		t.Fatal(err)
	}
	a1, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	running(t, s, a1)
	zoneA := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	failed := &strategy.Evidence{Attempt: 1, Outcome: strategy.UserFailure, ExitCodes: []*int{code(3)}, Placement: zoneA}
	if err := s.EndAttempt(ctx, a1, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(3)}},
		strategy.Decision{Action: strategy.Recover, Counters: strategy.Counters{RestartsOnErrors: 1}, Rule: strategy.RuleConfirming,
			Reason: "confirming failure"}, Facts{ConfirmFrom: failed}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.PendingConfirmation(ctx, id, 0); err != nil || p == nil || p.Attempt != 1 || p.Placement != zoneA {
		t.Fatalf("pending confirmation: %+v %v", p, err)
	}
	prev, _ := s.LastAttempt(ctx, id, 0)
	a2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), prev, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLaunched(ctx, a2.ID, "local", "local", "local-b", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a2); err != nil {
		t.Fatal(err)
	}
	v := &strategy.Verdict{Kind: kind, First: *failed, At: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC),
		Second: strategy.Evidence{Attempt: 2, Outcome: second.Outcome, ExitCodes: second.ExitCodes,
			Placement: schema.Placement{Cloud: "local", Region: "local", Zone: "local-b"}}}
	if err := s.EndAttempt(ctx, a2, second, d, Facts{Verdict: v, TaskName: "t0"}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.PendingConfirmation(ctx, id, 0); err != nil || p != nil {
		t.Fatalf("confirmation still pending after its verdict: %+v %v", p, err)
	}
	return id
}

func testConfirmations(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	fail := strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 2}, Status: lifecycle.Failed}

	// Deterministic: a known failure, with both attempts as its evidence.
	det := confirmedJob(t, s, "det", Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(3)}}, strategy.Deterministic, fail)
	f, err := s.KnownFailure(ctx, "det")
	if err != nil || f == nil {
		t.Fatalf("known failure: %+v %v", f, err)
	}
	if f.JobID != det || f.Verdict != strategy.Deterministic || len(f.Evidence) != 2 ||
		f.Evidence[0].Placement.Zone != "local-a" || f.Evidence[1].Placement.Zone != "local-b" || *f.Evidence[1].ExitCodes[0] != 3 {
		t.Errorf("deterministic known failure: %+v", f)
	}
	cs, err := s.Confirmations(ctx, det)
	if err != nil || len(cs) != 1 || cs[0].Verdict != strategy.Deterministic || cs[0].Confirming == nil || cs[0].DecidedAt == nil {
		t.Fatalf("confirmations of the deterministic job: %+v %v", cs, err)
	}

	// Flaky three times out of four runs: never a known failure, and a
	// flaky verdict forgets one recorded before.
	endFailedKey(t, s, "flaky")
	if f, _ := s.KnownFailure(ctx, "flaky"); f == nil || f.Verdict != "" {
		t.Fatalf("unconfirmed known failure: %+v", f)
	}
	confirmedJob(t, s, "flaky", Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}}, strategy.Flaky, fail)
	if f, _ := s.KnownFailure(ctx, "flaky"); f != nil {
		t.Fatalf("flaky inputs kept as a known failure: %+v", f)
	}
	succeed := strategy.Decision{Action: strategy.Succeed, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.Succeeded}
	confirmedJob(t, s, "flaky", Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}}, strategy.Flaky, succeed)
	last := confirmedJob(t, s, "flaky", Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}}, strategy.Flaky, succeed)
	flaky, runs, err := s.FlakyRuns(ctx, "flaky")
	if err != nil || flaky != 3 || runs != 4 {
		t.Fatalf("FlakyRuns = %d of %d, %v; want 3 of 4", flaky, runs, err)
	}
	fi, err := s.FlakyInputs(ctx)
	if err != nil || len(fi) != 1 {
		t.Fatalf("FlakyInputs: %+v %v", fi, err)
	}
	got := fi[0]
	if got.Latest.JobID != last || got.Flaky != 3 || got.Runs != 4 || got.JobName != "train" ||
		got.Latest.Confirming == nil || got.Latest.Confirming.Outcome != strategy.Succeeded {
		t.Errorf("flaky input: %+v", got)
	}
	if diff := cmp.Diff([]*int{code(3)}, got.Latest.Failed.ExitCodes); diff != "" {
		t.Errorf("failed attempt's codes (-want +got):\n%s", diff)
	}
}

// endFailedKey runs a job with inputs key whose first attempt fails for
// good, unconfirmed.
func endFailedKey(t *testing.T, s *Store, key string) {
	t.Helper()
	id, err := s.CreateJob(context.Background(), &Job{Name: "train", Spec: []byte(`{}`), InputKey: key}, []NewTask{{Name: "t0"}})
	if err != nil {
		t.Fatal(err)
	}
	endFailed(t, s, id, "exit code 1")
}

func TestForgetFlakyInputs(t *testing.T) { onEach(t, testForgetFlakyInputs) }

// Inputs found flaky are forgotten by key prefix, as known failures are,
// and by forget --all.
func testForgetFlakyInputs(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	succeed := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded}
	id := confirmedJob(t, s, "flaky-one", Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}}, strategy.Flaky, succeed)
	confirmedJob(t, s, "flaky-two", Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}}, strategy.Flaky, succeed)
	var seen *KnownFailure
	key, job, err := s.ForgetFailureBy(ctx, "flaky-o", "alice", func(f *KnownFailure) error { seen = f; return nil })
	if err != nil || key != "flaky-one" || job != id || seen == nil || seen.JobID != id {
		t.Fatalf("forget flaky-o: %q %d %v, checked %+v", key, job, err, seen)
	}
	if n, _, _ := s.FlakyRuns(ctx, "flaky-one"); n != 0 {
		t.Errorf("flaky-one still counted %d flaky after forget", n)
	}
	if _, err := s.ForgetAllFailures(ctx); err != nil {
		t.Fatal(err)
	}
	if fi, _ := s.FlakyInputs(ctx); len(fi) != 0 {
		t.Errorf("flaky inputs after forget --all: %+v", fi)
	}
}
