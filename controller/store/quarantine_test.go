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
	return failOn(t, s, "local", zone, "", "", input, o)
}

// failOn runs one job to an attempt that ends with o, on an instance type
// in a zone of region, or on a host.
func failOn(t *testing.T, s *Store, region, zone, instanceType, host, input string, o Observed) int64 {
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
	if err := s.SetPlacement(ctx, a.ID, "local", region, zone, instanceType, Billing{}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLaunched(ctx, a.ID, "local", region, zone, []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if host != "" {
		if err := s.SetHost(ctx, a.ID, host); err != nil {
			t.Fatal(err)
		}
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
	if _, err := s.ClearQuarantine(ctx, strategy.QuarantineKey{Placement: schema.Placement{Cloud: "LOCAL", Region: "local", Zone: "local-a"}}, "ops"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Quarantined(ctx, policy); err != nil || len(got) != 0 {
		t.Fatalf("after the clear: %+v, %v; want none", got, err)
	}
	clears, err := s.QuarantineClears(ctx)
	if err != nil || len(clears) != 1 || clears[0].Key != (strategy.QuarantineKey{Placement: za}) || clears[0].By != "ops" {
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

func TestQuarantinedLevels(t *testing.T) { onEach(t, testQuarantinedLevels) }

// An attempt's instance type and Kubernetes node are stored with it, read
// back by PlacementFailures, kept by a restart on the same cluster, and
// each level is quarantined and cleared on its own.
func testQuarantinedLevels(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	policy := strategy.DefaultQuarantine()
	lost := Observed{Outcome: strategy.NodeLost, Reason: "cluster is gone"}
	for i := range 3 {
		failOn(t, s, "local", "local-a", "p4d.24xlarge", "", fmt.Sprintf("t%d", i), lost)
		failOn(t, s, "prod", fmt.Sprintf("ns-%d", i), "", "gpu-7", fmt.Sprintf("h%d", i), lost)
	}
	fs, err := s.PlacementFailures(ctx, s.now().Add(-policy.Window()))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 6 || fs[0].InstanceType != "p4d.24xlarge" || fs[0].Host != "" || fs[1].Host != "gpu-7" || fs[1].InstanceType != "" {
		t.Fatalf("placement failures: %+v", fs)
	}
	typ := strategy.QuarantineKey{Placement: schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}, InstanceType: "p4d.24xlarge"}
	node := strategy.QuarantineKey{Placement: schema.Placement{Cloud: "local", Region: "prod"}, Host: "gpu-7"}
	keys := func() []strategy.QuarantineKey {
		t.Helper()
		got, err := s.Quarantined(ctx, policy)
		if err != nil {
			t.Fatal(err)
		}
		var ks []strategy.QuarantineKey
		for _, q := range got {
			ks = append(ks, q.Key())
		}
		return ks
	}
	if diff := cmp.Diff([]strategy.QuarantineKey{typ, node}, keys()); diff != "" {
		t.Fatalf("quarantined (-want +got):\n%s", diff)
	}
	if _, err := s.ClearQuarantine(ctx, node, "ops"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]strategy.QuarantineKey{typ}, keys()); diff != "" {
		t.Fatalf("after the node's clear (-want +got):\n%s", diff)
	}
	// A clear of the zone clears the types in it.
	if _, err := s.ClearQuarantine(ctx, strategy.QuarantineKey{Placement: typ.Placement}, "ops"); err != nil {
		t.Fatal(err)
	}
	if got := keys(); len(got) != 0 {
		t.Fatalf("after the zone's clear: %v, want none", got)
	}
	clears, err := s.QuarantineClears(ctx)
	if err != nil || len(clears) != 2 || clears[0].Key != (strategy.QuarantineKey{Placement: typ.Placement}) || clears[1].Key != node {
		t.Fatalf("clears: %+v, %v", clears, err)
	}

	// A restart on the same cluster keeps where it runs.
	id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`)}, []NewTask{{Name: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPlacement(ctx, a.ID, "local", "prod", "ml", "big", Billing{}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLaunched(ctx, a.ID, "local", "prod", "ml", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHost(ctx, a.ID, "gpu-3"); err != nil {
		t.Fatal(err)
	}
	a, err = s.LastAttempt(ctx, id, 0)
	if err != nil || a.InstanceType != "big" || a.Host != "gpu-3" {
		t.Fatalf("attempt read back: %+v, %v", a, err)
	}
	if err := s.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	fail := Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "exited 1"}
	if err := s.EndAttempt(ctx, a, fail, strategy.Decision{Action: strategy.Restart, Rule: strategy.RuleRestartOnError}, Facts{}); err != nil {
		t.Fatal(err)
	}
	b2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), a, lifecycle.Recovering)
	if err != nil || b2.InstanceType != "big" || b2.Host != "gpu-3" {
		t.Fatalf("restart on the same cluster: %+v, %v", b2, err)
	}
	if b2, err = s.LastAttempt(ctx, id, 0); err != nil || b2.Attempt != 2 || b2.InstanceType != "big" || b2.Host != "gpu-3" {
		t.Fatalf("restart read back: %+v, %v", b2, err)
	}
}
