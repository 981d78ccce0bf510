package service

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// runConfirmed launches file and plays its job: attempt 1 fails with exit
// 3 in local-a and is run again in local-b, where it ends as second says.
func runConfirmed(t *testing.T, s *Service, root string, second int, kind strategy.VerdictKind) int64 {
	t.Helper()
	ctx := context.Background()
	v, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(root, "t.yaml"), Dir: root, RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	next := lifecycle.Starting
	attempt := func(zone string) *store.Attempt {
		defer func() { next = lifecycle.Recovering }()
		prev, _ := s.Store.LastAttempt(ctx, v.ID, 0)
		a, err := s.Store.NewAttempt(ctx, v.ID, 0, func(n int) string { return "c" + zone }, prev, next)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Store.MarkLaunched(ctx, a.ID, "local", "local", zone, []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Store.MarkRunning(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	three := 3
	zoneA := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	failed := &strategy.Evidence{Attempt: 1, Outcome: strategy.UserFailure, ExitCodes: []*int{&three}, Placement: zoneA}
	if err := s.Store.EndAttempt(ctx, attempt("local-a"), store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&three}},
		strategy.Decision{Action: strategy.Recover, Rule: strategy.RuleConfirming, Reason: "confirming failure"}, store.Facts{ConfirmFrom: failed}); err != nil {
		t.Fatal(err)
	}
	outcome, d := strategy.UserFailure, strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "deterministic"}
	if second == 0 {
		outcome, d = strategy.Succeeded, strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "flaky"}
	}
	v2 := &strategy.Verdict{Kind: kind, First: *failed,
		Second: strategy.Evidence{Attempt: 2, Outcome: outcome, ExitCodes: []*int{&second}, Placement: schema.Placement{Cloud: "local", Region: "local", Zone: "local-b"}}}
	if err := s.Store.EndAttempt(ctx, attempt("local-b"), store.Observed{Outcome: outcome, ExitCodes: []*int{&second}}, d,
		store.Facts{Verdict: v2}); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// A deterministic failure is refused on relaunch and listed with its
// verdict and both attempts; flaky inputs are listed, never refused, and
// `jobs show` marks the confirming attempt and counts the flaky runs.
func TestConfirmedFailures(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	det := project(t, map[string]string{"t.yaml": "run: exit 3\n"})
	runConfirmed(t, s, det, 3, strategy.Deterministic)
	_, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(det, "t.yaml"), Dir: det})
	var kf *contract.KnownFailureError
	if !errors.As(err, &kf) || kf.Failure.Verdict != contract.VerdictDeterministic {
		t.Fatalf("relaunch of a deterministic failure: %v", err)
	}

	flaky := project(t, map[string]string{"t.yaml": "run: maybe\n"})
	runConfirmed(t, s, flaky, 0, strategy.Flaky)
	runConfirmed(t, s, flaky, 0, strategy.Flaky)
	last := runConfirmed(t, s, flaky, 0, strategy.Flaky)
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: filepath.Join(flaky, "t.yaml"), Dir: flaky}); err != nil {
		t.Fatalf("relaunch of flaky inputs refused: %v", err)
	}

	fs, err := s.Failures(ctx)
	if err != nil || len(fs) != 2 {
		t.Fatalf("failures: %+v %v", fs, err)
	}
	if f := fs[0]; f.Verdict != contract.VerdictDeterministic || len(f.Evidence) != 2 || f.Evidence[0].Zone != "local-a" || f.Evidence[1].Zone != "local-b" {
		t.Errorf("deterministic failure: %+v", f)
	}
	if f := fs[1]; f.Verdict != contract.VerdictFlaky || f.JobID != last || f.Flaky != 3 || f.Runs != 3 || len(f.Evidence) != 2 ||
		f.Evidence[1].Outcome != string(strategy.Succeeded) {
		t.Errorf("flaky inputs: %+v", f)
	}

	d, err := s.Show(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	if d.Flaky == nil || d.Flaky.Flaky != 3 || d.Flaky.Runs != 3 {
		t.Errorf("show's flaky count: %+v", d.Flaky)
	}
	if len(d.Attempts) != 2 || d.Attempts[0].Confirms != nil || d.Attempts[1].Confirms == nil || *d.Attempts[1].Confirms != 1 ||
		d.Attempts[1].Verdict == nil || *d.Attempts[1].Verdict != "flaky" {
		t.Errorf("show's attempts: %+v", d.Attempts)
	}
}
