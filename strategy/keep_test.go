package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
)

func TestKeepOnFailure(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	failed := Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleNoRestartsLeft}
	tests := []struct {
		name    string
		keepFor time.Duration
		ended   Ended
		d       Decision
		want    Kept
	}{
		{"a failed task is kept for keep_on_failure", 30 * time.Minute,
			Ended{Outcome: UserFailure, ExitCodes: codes(1)}, failed,
			Kept{Keep: true, Until: now.Add(30 * time.Minute), Rule: KeepFailed}},
		{"a failed setup is kept", time.Hour,
			Ended{Outcome: SetupFailure, ExitCodes: codes(2)}, Decision{Action: Fail, Status: lifecycle.FailedSetup},
			Kept{Keep: true, Until: now.Add(time.Hour), Rule: KeepFailed}},
		{"max_duration stopping a running task is kept", time.Minute,
			Ended{Outcome: TimedOut}, Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleMaxDuration},
			Kept{Keep: true, Until: now.Add(time.Minute), Rule: KeepFailed}},
		{"no keep_on_failure keeps nothing", 0,
			Ended{Outcome: UserFailure, ExitCodes: codes(1)}, failed, Kept{Rule: KeepNotAsked}},
		{"a negative keep keeps nothing", -time.Minute,
			Ended{Outcome: UserFailure, ExitCodes: codes(1)}, failed, Kept{Rule: KeepNotAsked}},
		{"a restart reuses the cluster, it is not kept", time.Hour,
			Ended{Outcome: UserFailure, ExitCodes: codes(1)}, Decision{Action: Restart},
			Kept{Rule: KeepNotFailure}},
		{"a success is not kept", time.Hour,
			Ended{Outcome: Succeeded}, Decision{Action: Succeed, Status: lifecycle.Succeeded},
			Kept{Rule: KeepNotFailure}},
		{"a cancel is not kept", time.Hour,
			Ended{Outcome: Cancelled}, Decision{Action: Cancel, Status: lifecycle.Cancelled},
			Kept{Rule: KeepNotFailure}},
		{"a preemption that NONE ends is not kept", time.Hour,
			Ended{Outcome: Preempted}, Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleNoRecovery},
			Kept{Rule: KeepNoCluster}},
		{"a lost node past max_recoveries is not kept", time.Hour,
			Ended{Outcome: NodeLost}, Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleNoRecoveryLeft},
			Kept{Rule: KeepNoCluster}},
		{"a launch failure is not kept", time.Hour,
			Ended{Outcome: LaunchFailed}, Decision{Action: Fail, Status: lifecycle.FailedNoResource},
			Kept{Rule: KeepNotFailure}},
		{"a controller error is not kept", time.Hour,
			Ended{Outcome: ControllerError}, Decision{Action: Fail, Status: lifecycle.FailedController},
			Kept{Rule: KeepNotFailure}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := KeepOnFailure(tt.keepFor, tt.ended, tt.d, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("KeepOnFailure (-want +got):\n%s", diff)
			}
		})
	}
}

// The decision Decide makes for the last failure of a task is the one the
// rule keeps, and a restart on errors before it is not.
func TestKeepOnFailureAfterDecide(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := Policy{MaxRestartsOnErrors: 1}
	e := Ended{Outcome: UserFailure, ExitCodes: codes(3)}
	first := Decide(p, Counters{}, e, true)
	if k := KeepOnFailure(time.Hour, e, first, now); k.Keep {
		t.Errorf("restart 1/1: kept %+v, want the cluster reused, not kept", k)
	}
	last := Decide(p, first.Counters, e, true)
	if k := KeepOnFailure(time.Hour, e, last, now); !k.Keep || !k.Until.Equal(now.Add(time.Hour)) {
		t.Errorf("no restarts left: %+v, want kept until %v", k, now.Add(time.Hour))
	}
}

func TestReleaseDue(t *testing.T) {
	until := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	tests := []struct {
		name       string
		requested  string
		now        time.Time
		wantReason string
		wantDue    bool
	}{
		{"before its time it stays", "", until.Add(-time.Second), "", false},
		{"at its time it goes", "", until, ReleasedExpired, true},
		{"after its time it goes", "", until.Add(time.Hour), ReleasedExpired, true},
		{"a release goes at once", ReleasedByUser, until.Add(-time.Hour), ReleasedByUser, true},
		{"a cancel goes at once", ReleasedByCancel, until.Add(-time.Hour), ReleasedByCancel, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, due := ReleaseDue(until, tt.requested, tt.now)
			if reason != tt.wantReason || due != tt.wantDue {
				t.Errorf("ReleaseDue = %q, %v; want %q, %v", reason, due, tt.wantReason, tt.wantDue)
			}
		})
	}
}
