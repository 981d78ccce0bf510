package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

func TestConfirm(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	zoneB := schema.Placement{Cloud: "local", Region: "local", Zone: "local-b"}
	east1b := schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"}
	east1a := schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}
	once := ConfirmPolicy{Runs: 1}
	counted := ConfirmPolicy{Runs: 1, CountsAsRestart: true}
	noBudget := Policy{}
	budget1 := Policy{MaxRestartsOnErrors: 1}
	failedA := &Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}

	tests := []struct {
		name     string
		confirm  ConfirmPolicy
		policy   Policy
		counters Counters
		ended    Ended
		attempt  int
		pending  *Evidence
		next     *schema.Placement
		want     Confirmed
	}{
		{
			name:   "no confirmation asked: the failure ends the job as Decide says",
			policy: noBudget, ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}, attempt: 1, next: &zoneB,
			want: Confirmed{Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed,
				Rule: RuleNoRestartsLeft, Reason: "exit code 3; no restarts left (max_restarts_on_errors 0)"}},
		},
		{
			name:    "a failure that would end the job runs again on another placement first",
			confirm: once, policy: noBudget,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: east1a}, attempt: 1, next: &east1b,
			want: Confirmed{Start: &Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: codes(3), Placement: east1a},
				Decision: Decision{Action: Recover, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleConfirming,
					Reason: "confirming failure: exit code 3 in us-east-1/us-east-1a; run again on us-east-1/us-east-1b"}},
		},
		{
			name:    "nowhere else allowed: the same placement, and the reason says so",
			confirm: once, policy: noBudget,
			ended: Ended{Outcome: SetupFailure, ExitCodes: codes(1), Placement: zoneA}, attempt: 2, next: &zoneA,
			want: Confirmed{Start: &Evidence{Attempt: 2, Outcome: SetupFailure, ExitCodes: codes(1), Placement: zoneA},
				Decision: Decision{Action: Recover, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleConfirming,
					Reason: "confirming failure: setup exit code 1 in local/local-a; run again on local/local-a (no other placement is allowed)"}},
		},
		{
			name:    "a restart within the budget is not a confirmation unless it counts",
			confirm: once, policy: budget1,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}, attempt: 1, next: &zoneB,
			want: Confirmed{Decision: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1},
				Rule: RuleRestartOnError, Reason: "exit code 3; restart 1/1 on errors"}},
		},
		{
			name:    "counted as a restart: the budgeted restart is the confirmation",
			confirm: counted, policy: budget1,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}, attempt: 1, next: &zoneB,
			want: Confirmed{Start: &Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA},
				Decision: Decision{Action: Recover, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleConfirming,
					Reason: "confirming failure: exit code 3 (restart 1 on errors) in local/local-a; run again on local/local-b"}},
		},
		{
			name:    "counted as a restart with none left: the job ends unconfirmed",
			confirm: counted, policy: noBudget,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}, attempt: 1, next: &zoneB,
			want: Confirmed{Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed,
				Rule: RuleNoRestartsLeft, Reason: "exit code 3; no restarts left (max_restarts_on_errors 0)"}},
		},
		{
			name:    "a listed exit code restarts as it always does",
			confirm: once, policy: Policy{RecoverOnExitCodes: []int{3}},
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneA}, attempt: 1, next: &zoneB,
			want: Confirmed{Decision: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 3 matched recover_on_exit_codes [3]"}},
		},
		{
			name:    "the same exit code again is deterministic",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1}, pending: failedA,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Deterministic, First: *failedA, At: clock.Now(),
					Second: Evidence{Attempt: 2, Outcome: UserFailure, ExitCodes: codes(3), Placement: zoneB}},
				Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Rule: RuleDeterministic,
					Reason: "deterministic: exit 3 twice (local/local-a, then local/local-b)"}},
		},
		{
			name:    "a success after the failure is flaky, and the job succeeds",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1}, pending: failedA,
			ended: Ended{Outcome: Succeeded, ExitCodes: codes(0), Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Flaky, First: *failedA, At: clock.Now(),
					Second: Evidence{Attempt: 2, Outcome: Succeeded, ExitCodes: codes(0), Placement: zoneB}},
				Decision: Decision{Action: Succeed, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Succeeded, Rule: RuleFlaky,
					Reason: "flaky: exit 3 then 0; succeeded"}},
		},
		{
			name:    "another exit code is flaky, and ends the job as Decide says",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1}, pending: failedA,
			ended: Ended{Outcome: UserFailure, ExitCodes: codes(1), Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Flaky, First: *failedA, At: clock.Now(),
					Second: Evidence{Attempt: 2, Outcome: UserFailure, ExitCodes: codes(1), Placement: zoneB}},
				Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 2}, Status: lifecycle.Failed, Rule: RuleFlaky,
					Reason: "flaky: exit 3 then 1; exit code 1; no restarts left (max_restarts_on_errors 0)"}},
		},
		{
			name:    "setup failing where the run failed is another outcome: flaky",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1}, pending: failedA,
			ended: Ended{Outcome: SetupFailure, ExitCodes: codes(3), Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Flaky, First: *failedA, At: clock.Now(),
					Second: Evidence{Attempt: 2, Outcome: SetupFailure, ExitCodes: codes(3), Placement: zoneB}},
				Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 2}, Status: lifecycle.FailedSetup, Rule: RuleFlaky,
					Reason: "flaky: exit 3 then setup exit 3; setup exit code 3; no restarts left (max_restarts_on_errors 0)"}},
		},
		{
			name:    "an unknown exit code twice is not the same code",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1},
			pending: &Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: []*int{nil}, Placement: zoneA},
			ended:   Ended{Outcome: UserFailure, ExitCodes: []*int{nil}, Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Flaky, At: clock.Now(),
					First:  Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: []*int{nil}, Placement: zoneA},
					Second: Evidence{Attempt: 2, Outcome: UserFailure, ExitCodes: []*int{nil}, Placement: zoneB}},
				Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 2}, Status: lifecycle.Failed, Rule: RuleFlaky,
					Reason: "flaky: exit ? then ?; failed, no exit code known; no restarts left (max_restarts_on_errors 0)"}},
		},
		{
			name:    "a preemption of the confirmation run recovers, the confirmation still pending",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1}, pending: failedA,
			ended: Ended{Outcome: Preempted, Placement: zoneB}, attempt: 2,
			want: Confirmed{Decision: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, RestartsOnErrors: 1},
				Rule: RulePreempted, Reason: "preemption in local/local-b"}},
		},
		{
			name:    "several nodes: the same codes on every node is deterministic",
			confirm: once, policy: noBudget, counters: Counters{RestartsOnErrors: 1},
			pending: &Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: codes(0, 3), Placement: zoneA},
			ended:   Ended{Outcome: UserFailure, ExitCodes: codes(0, 3), Placement: zoneB}, attempt: 2,
			want: Confirmed{
				Verdict: &Verdict{Kind: Deterministic, At: clock.Now(),
					First:  Evidence{Attempt: 1, Outcome: UserFailure, ExitCodes: codes(0, 3), Placement: zoneA},
					Second: Evidence{Attempt: 2, Outcome: UserFailure, ExitCodes: codes(0, 3), Placement: zoneB}},
				Decision: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Rule: RuleDeterministic,
					Reason: "deterministic: exit 0,3 twice (local/local-a, then local/local-b)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.policy, tt.counters, tt.ended, true)
			got := Confirm(tt.confirm, tt.counters, tt.ended, tt.attempt, d, tt.pending, tt.next, clock.Now())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Confirm mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfirmOrder(t *testing.T) {
	zoneB := schema.Placement{Cloud: "local", Region: "local", Zone: "local-b"}
	other := schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}
	cands := []Candidate{{Placement: zoneA}, {Placement: zoneB}, {Placement: other}}
	got := ConfirmOrder(cands, zoneA)
	want := []Candidate{{Placement: zoneB}, {Placement: other}, {Placement: zoneA}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfirmOrder mismatch (-want +got):\n%s", diff)
	}
	if got := ConfirmOrder([]Candidate{{Placement: zoneA}}, zoneA); len(got) != 1 {
		t.Errorf("a task allowed one placement runs there again: got %v", got)
	}
}
