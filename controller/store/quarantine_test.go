package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

func TestQuarantined(t *testing.T) { onEach(t, testQuarantined) }

// failAt runs one job to an attempt on zone that ends with o.
func failAt(t *testing.T, s *Store, zone, input string, o Observed) int64 {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), InputKey: input}, []NewTask{{Name: "t", InputKey: input}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLaunched(ctx, a.ID, "local", "local", zone, []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	d := strategy.Decision{Action: strategy.Recover, Rule: strategy.RuleNodeLost, Reason: o.Reason}
	if o.Outcome != strategy.NodeLost {
		d = strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Rule: strategy.RuleNoRestartsLeft, Reason: o.Reason}
	}
	if err := s.EndAttempt(ctx, a, o, d, Facts{}); err != nil {
		t.Fatal(err)
	}
	return id
}

func testQuarantined(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	policy := strategy.DefaultQuarantine()
	za := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	lost := Observed{Outcome: strategy.NodeLost, Reason: "cluster is gone"}
	var ids []int64
	for i := range 3 {
		ids = append(ids, failAt(t, s, "local-a", fmt.Sprintf("k%d", i), lost))
		// The task's own failures elsewhere never count.
		failAt(t, s, "local-b", fmt.Sprintf("u%d", i), Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "exited 1"})
	}
	// Setup failing with one code for two inputs counts; the exit code
	// is the first non-zero one.
	for i := range 2 {
		failAt(t, s, "local-c", fmt.Sprintf("s%d", i), Observed{Outcome: strategy.SetupFailure, ExitCodes: []*int{code(0), code(7)}, Reason: "setup exited 7"})
	}
	fs, err := s.PlacementFailures(ctx, s.now().Add(-policy.Window()))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 5 || fs[4].ExitCode == nil || *fs[4].ExitCode != 7 || fs[4].InputKey != "s1" || fs[0].Placement != za || fs[0].Outcome != strategy.NodeLost {
		t.Errorf("placement failures: %+v", fs)
	}
	got, err := s.Quarantined(ctx, policy)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Placement != za || !cmp.Equal(got[0].Jobs, []int64{ids[2], ids[1], ids[0]}) || got[0].Cause != "lost their node" {
		t.Fatalf("quarantined: %+v, want local-a by jobs %v", got, ids)
	}
	// Cleared (the cloud's name in any case): the failures so far no longer count.
	if _, err := s.ClearQuarantine(ctx, schema.Placement{Cloud: "LOCAL", Region: "local", Zone: "local-a"}, "ops"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Quarantined(ctx, policy); err != nil || len(got) != 0 {
		t.Fatalf("after the clear: %+v, %v; want none", got, err)
	}
	clears, err := s.QuarantineClears(ctx)
	if err != nil || len(clears) != 1 || clears[0].Placement != za || clears[0].By != "ops" {
		t.Fatalf("clears: %+v, %v", clears, err)
	}
	// New failures after the clear count again.
	for i := range 3 {
		failAt(t, s, "local-a", fmt.Sprintf("n%d", i), lost)
	}
	if got, err := s.Quarantined(ctx, policy); err != nil || len(got) != 1 || got[0].Placement != za || len(got[0].Jobs) != 3 {
		t.Fatalf("failures after the clear: %+v, %v; want local-a by 3 jobs", got, err)
	}
	// Off: nothing, without reading.
	if got, err := s.Quarantined(ctx, strategy.QuarantinePolicy{}); err != nil || got != nil {
		t.Fatalf("off: %+v, %v", got, err)
	}
}

func TestQuarantinedByFlakyFailures(t *testing.T) { onEach(t, testQuarantinedByFlakyFailures) }

// Failures that a confirmation found flaky count against the placement
// where they failed, whatever the inputs; those found deterministic are
// the inputs' own and do not.
func testQuarantinedByFlakyFailures(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	policy := strategy.DefaultQuarantine()
	za := schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}
	fail := strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 2}, Status: lifecycle.Failed}
	succeed := strategy.Decision{Action: strategy.Succeed, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.Succeeded}
	ok := Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}}
	for i := range 3 {
		confirmedJob(t, s, fmt.Sprintf("det%d", i), Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(3)}}, strategy.Deterministic, fail)
	}
	if got, err := s.Quarantined(ctx, policy); err != nil || len(got) != 0 {
		t.Fatalf("after deterministic failures: %+v, %v; want none", got, err)
	}
	var ids []int64
	for i := range 2 {
		ids = append(ids, confirmedJob(t, s, fmt.Sprintf("flaky%d", i), ok, strategy.Flaky, succeed))
	}
	if got, err := s.Quarantined(ctx, policy); err != nil || len(got) != 0 {
		t.Fatalf("after two flaky jobs: %+v, %v; want none", got, err)
	}
	ids = append(ids, confirmedJob(t, s, "flaky2", Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}}, strategy.Flaky, fail))
	fs, err := s.PlacementFailures(ctx, s.now().Add(-policy.Window()))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 3 || !fs[0].Flaky || fs[0].Placement != za || fs[0].JobID != ids[0] || fs[0].InputKey != "flaky0" || fs[0].Outcome != strategy.UserFailure {
		t.Errorf("placement failures: %+v", fs)
	}
	got, err := s.Quarantined(ctx, policy)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Placement != za || !cmp.Equal(got[0].Jobs, []int64{ids[2], ids[1], ids[0]}) || got[0].Cause != "failed flakily" {
		t.Fatalf("quarantined: %+v, want local-a by jobs %v", got, ids)
	}
}
