package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// A refusal of inputs that failed after escalating says the size they
// failed at; one recorded before escalation existed (no size) reads as
// before.
func TestKnownFailureSaysTheSize(t *testing.T) {
	code := 137
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &store.KnownFailure{JobID: 12, Status: lifecycle.Failed, ExitCodes: []*int{&code}, RecordedAt: now.Add(-time.Hour),
		Size: &strategy.Size{Memory: "64"}}
	msg := knownFailure(f, now, "").Error()
	if !strings.Contains(msg, "failed in job 12 (exit code 137 at memory 64 GB, 1 hour ago)") {
		t.Errorf("message %q does not say the size", msg)
	}
	f.Size = nil
	msg = knownFailure(f, now, "").Error()
	if !strings.Contains(msg, "failed in job 12 (exit code 137, 1 hour ago)") {
		t.Errorf("message %q", msg)
	}
}

// A dry run's plan shows each task's limits and escalation; a task
// without them shows null.
func TestPlanShowsTheLimits(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{"p.yaml": "resources: {memory: 16+, accelerators: L4, job_recovery: {max_duration: 90m, max_recoveries: 3,\n" +
		"  max_restarts_on_errors: 2, escalate: {on_exit_codes: [137], memory: 2x, max_memory: 64, accelerators: [L4, A100]}}}\nrun: 'true'\n---\nrun: 'true'\n"})
	plan, err := s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "p.yaml"), Dir: root})
	if err != nil {
		t.Fatal(err)
	}
	s2 := func(v string) *string { return &v }
	three := 3
	want := []contract.TaskPlan{
		{MaxDuration: s2("1h30m"), MaxRecoveries: &three, Escalate: &contract.EscalatePlan{OnExitCodes: []int{137}, Memory: s2("2x"), MaxMemory: s2("64"),
			Accelerators: []string{"L4:1", "A100:1"}}},
		{},
	}
	for i, tp := range plan.Tasks {
		got := contract.TaskPlan{MaxDuration: tp.MaxDuration, MaxRecoveries: tp.MaxRecoveries, Escalate: tp.Escalate}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("task %d limits (-want +got):\n%s", i, diff)
		}
	}
}
