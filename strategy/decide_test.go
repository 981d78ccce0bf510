package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
)

func codes(cs ...int) []*int {
	out := make([]*int, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	return out
}

var zoneA = schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}

func TestDecide(t *testing.T) {
	listed := Policy{MaxRestartsOnErrors: 0, RecoverOnExitCodes: []int{29}}
	budget2 := Policy{MaxRestartsOnErrors: 2, RecoverOnExitCodes: []int{29, 137}}

	tests := []struct {
		name     string
		policy   Policy
		counters Counters
		ended    Ended
		lastTask bool
		want     Decision
	}{
		{
			name:     "preemption recovers and leaves the error budget alone",
			policy:   budget2,
			counters: Counters{RecoveryCount: 1, RestartsOnErrors: 2},
			ended:    Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 2, LossRecoveries: 1, RestartsOnErrors: 2},
				Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:   "preemption folds the provider's detail into the reason",
			policy: listed,
			ended: Ended{Outcome: Preempted, Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"},
				Detail: "Server.SpotInstanceTermination"},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1}, Rule: RulePreempted,
				Reason: "preemption in us-east-1/us-east-1a (Server.SpotInstanceTermination)"},
		},
		{
			name:     "preempted by priority requeues, every budget untouched, even with none left",
			policy:   Policy{MaxRestartsOnErrors: 0, MaxRecoveries: 1, NoRecovery: true},
			counters: Counters{RecoveryCount: 1, LossRecoveries: 1, RestartsOnErrors: 1},
			ended:    Ended{Outcome: PreemptedByPriority, Detail: "preempted by priority: job 7 (priority 900) took its place"},
			want: Decision{Action: Requeue, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, RestartsOnErrors: 1},
				Rule: RulePreemptedByPriority, Reason: "preempted by priority: job 7 (priority 900) took its place"},
		},
		{
			name:     "node lost recovers even with exhausted budget",
			policy:   Policy{},
			counters: Counters{RestartsOnErrors: 5},
			ended:    Ended{Outcome: NodeLost, Placement: schema.Placement{Cloud: "gcp", Region: "us-central1"}},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1, RestartsOnErrors: 5},
				Rule: RuleNodeLost, Reason: "node lost in us-central1"},
		},
		{
			name:     "NONE ends the job at a preemption and leaves the counters alone",
			policy:   Policy{NoRecovery: true, MaxRestartsOnErrors: 2},
			counters: Counters{RestartsOnErrors: 1},
			ended:    Ended{Outcome: Preempted, Placement: zoneA, Detail: "Server.SpotInstanceTermination"},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed, Rule: RuleNoRecovery,
				Reason: "preemption in local/local-a (Server.SpotInstanceTermination); job_recovery is NONE, not recovering"},
		},
		{
			name:   "NONE ends the job when a node is lost",
			policy: Policy{NoRecovery: true},
			ended:  Ended{Outcome: NodeLost, Placement: zoneA},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleNoRecovery,
				Reason: "node lost in local/local-a; job_recovery is NONE, not recovering"},
		},
		{
			name:   "NONE still restarts on a listed exit code",
			policy: Policy{NoRecovery: true, RecoverOnExitCodes: []int{29}},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(29)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 matched recover_on_exit_codes [29]"},
		},
		{
			name:   "NONE still restarts within max_restarts_on_errors",
			policy: Policy{NoRecovery: true, MaxRestartsOnErrors: 1},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleRestartOnError,
				Reason: "exit code 1; restart 1/1 on errors"},
		},
		{
			name:     "the last recovery max_recoveries allows",
			policy:   Policy{MaxRecoveries: 2},
			counters: Counters{RecoveryCount: 4, LossRecoveries: 1},
			ended:    Ended{Outcome: Preempted, Placement: zoneA},
			want: Decision{Action: Recover, Counters: Counters{RecoveryCount: 5, LossRecoveries: 2}, Rule: RulePreempted,
				Reason: "preemption in local/local-a"},
		},
		{
			name:     "past max_recoveries the job ends FAILED; listed-code restarts do not count",
			policy:   Policy{MaxRecoveries: 2, RecoverOnExitCodes: []int{29}},
			counters: Counters{RecoveryCount: 7, LossRecoveries: 2},
			ended:    Ended{Outcome: NodeLost, Placement: zoneA},
			want: Decision{Action: Fail, Counters: Counters{RecoveryCount: 7, LossRecoveries: 2}, Status: lifecycle.Failed,
				Rule: RuleNoRecoveryLeft, Reason: "node lost in local/local-a; no recoveries left (max_recoveries 2)"},
		},
		{
			name:     "max_recoveries does not limit restarts on listed exit codes",
			policy:   Policy{MaxRecoveries: 1, RecoverOnExitCodes: []int{29}},
			counters: Counters{RecoveryCount: 1, LossRecoveries: 1},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(29)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 2, LossRecoveries: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 matched recover_on_exit_codes [29]"},
		},
		{
			name:     "timed out ends FAILED with the limit, whatever the budgets",
			policy:   Policy{MaxRestartsOnErrors: 5, RecoverOnExitCodes: []int{143}, MaxDuration: 12 * time.Hour},
			counters: Counters{RecoveryCount: 1},
			ended:    Ended{Outcome: TimedOut, ExitCodes: codes(143), Detail: "max_duration 12h exceeded"},
			want: Decision{Action: Fail, Counters: Counters{RecoveryCount: 1}, Status: lifecycle.Failed, Rule: RuleMaxDuration,
				Reason: "max_duration 12h exceeded"},
		},
		{
			name:   "listed exit code restarts without touching the budget",
			policy: listed,
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(29)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 matched recover_on_exit_codes [29]"},
		},
		{
			name:     "listed exit code restarts even when the budget is spent",
			policy:   budget2,
			counters: Counters{RecoveryCount: 7, RestartsOnErrors: 2},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(137)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 8, RestartsOnErrors: 2}, Rule: RuleExitCodeMatched,
				Reason: "exit code 137 matched recover_on_exit_codes [29, 137]"},
		},
		{
			name:   "any node's listed code is enough",
			policy: listed,
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(0, 29)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 on node 1 matched recover_on_exit_codes [29]"},
		},
		{
			name:   "a listed code among unknown ones still matches",
			policy: listed,
			ended:  Ended{Outcome: UserFailure, ExitCodes: []*int{nil, codes(1)[0], codes(29)[0]}},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "exit code 29 on node 2 matched recover_on_exit_codes [29]"},
		},
		{
			name:   "listed setup exit code restarts",
			policy: listed,
			ended:  Ended{Outcome: SetupFailure, ExitCodes: codes(29)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 1}, Rule: RuleExitCodeMatched,
				Reason: "setup exit code 29 matched recover_on_exit_codes [29]"},
		},
		{
			name:   "max_restarts_on_errors 0 fails the first unlisted code",
			policy: listed,
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: "FAILED", Rule: RuleNoRestartsLeft,
				Reason: "exit code 1; no restarts left (max_restarts_on_errors 0)"},
		},
		{
			name:   "zero policy fails the first failure",
			policy: Policy{},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(29)},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: "FAILED", Rule: RuleNoRestartsLeft,
				Reason: "exit code 29; no restarts left (max_restarts_on_errors 0)"},
		},
		{
			name:   "budget 2: first unlisted failure restarts at 1",
			policy: budget2,
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleRestartOnError,
				Reason: "exit code 1; restart 1/2 on errors"},
		},
		{
			name:     "budget 2: second unlisted failure restarts at 2",
			policy:   budget2,
			counters: Counters{RecoveryCount: 3, RestartsOnErrors: 1},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Restart, Counters: Counters{RecoveryCount: 3, RestartsOnErrors: 2}, Rule: RuleRestartOnError,
				Reason: "exit code 1; restart 2/2 on errors"},
		},
		{
			name:     "budget 2: third unlisted failure fails",
			policy:   budget2,
			counters: Counters{RestartsOnErrors: 2},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 3}, Status: "FAILED", Rule: RuleNoRestartsLeft,
				Reason: "exit code 1; no restarts left (max_restarts_on_errors 2)"},
		},
		{
			name:     "setup failure past the budget ends FAILED_SETUP",
			policy:   budget2,
			counters: Counters{RestartsOnErrors: 2},
			ended:    Ended{Outcome: SetupFailure, ExitCodes: codes(2)},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 3}, Status: "FAILED_SETUP", Rule: RuleNoRestartsLeft,
				Reason: "setup exit code 2; no restarts left (max_restarts_on_errors 2)"},
		},
		{
			name:   "setup failure within the budget restarts",
			policy: budget2,
			ended:  Ended{Outcome: SetupFailure, ExitCodes: codes(2)},
			want: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleRestartOnError,
				Reason: "setup exit code 2; restart 1/2 on errors"},
		},
		{
			name:   "no exit code known takes the budgeted path",
			policy: budget2,
			ended:  Ended{Outcome: UserFailure},
			want: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleRestartOnError,
				Reason: "failed, no exit code known; restart 1/2 on errors"},
		},
		{
			name:   "nil exit codes on every node take the budgeted path",
			policy: listed,
			ended:  Ended{Outcome: UserFailure, ExitCodes: []*int{nil, nil}},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: "FAILED", Rule: RuleNoRestartsLeft,
				Reason: "failed, no exit code known; no restarts left (max_restarts_on_errors 0)"},
		},
		{
			name:   "setup failure with no exit code known",
			policy: listed,
			ended:  Ended{Outcome: SetupFailure},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: "FAILED_SETUP", Rule: RuleNoRestartsLeft,
				Reason: "setup failed, no exit code known; no restarts left (max_restarts_on_errors 0)"},
		},
		{
			name:   "several nodes, none listed, unknown shown as ?",
			policy: budget2,
			ended:  Ended{Outcome: UserFailure, ExitCodes: []*int{codes(0)[0], nil, codes(3)[0]}, Detail: "OOM killed"},
			want: Decision{Action: Restart, Counters: Counters{RestartsOnErrors: 1}, Rule: RuleRestartOnError,
				Reason: "exit codes 0,?,3 (OOM killed); restart 1/2 on errors"},
		},
		{
			name:   "negative budget is read as zero",
			policy: Policy{MaxRestartsOnErrors: -3},
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(1)},
			want: Decision{Action: Fail, Counters: Counters{RestartsOnErrors: 1}, Status: "FAILED", Rule: RuleNoRestartsLeft,
				Reason: "exit code 1; no restarts left (max_restarts_on_errors 0)"},
		},
		{
			name:     "success of a middle task moves on",
			policy:   budget2,
			counters: Counters{RecoveryCount: 1, RestartsOnErrors: 1},
			ended:    Ended{Outcome: Succeeded, ExitCodes: codes(0)},
			want: Decision{Action: NextTask, Counters: Counters{RecoveryCount: 1, RestartsOnErrors: 1}, Rule: RuleTaskSucceeded,
				Reason: "task succeeded; starting the next task"},
		},
		{
			name:     "success of the last task ends the job",
			policy:   budget2,
			ended:    Ended{Outcome: Succeeded, ExitCodes: codes(0)},
			lastTask: true,
			want:     Decision{Action: Succeed, Status: "SUCCEEDED", Rule: RuleJobSucceeded, Reason: "succeeded"},
		},
		{
			name:     "cancel keeps the counters",
			policy:   budget2,
			counters: Counters{RecoveryCount: 2, RestartsOnErrors: 1},
			ended:    Ended{Outcome: Cancelled, ExitCodes: codes(143), Placement: zoneA},
			want: Decision{Action: Cancel, Counters: Counters{RecoveryCount: 2, RestartsOnErrors: 1}, Status: "CANCELLED",
				Rule: RuleCancelled, Reason: "cancelled by user"},
		},
		{
			name:   "cancel with a detail",
			policy: budget2,
			ended:  Ended{Outcome: Cancelled, Detail: "jobs cancel --all"},
			want:   Decision{Action: Cancel, Status: "CANCELLED", Rule: RuleCancelled, Reason: "cancelled by user (jobs cancel --all)"},
		},
		{
			name:   "cancel names who asked for it",
			policy: budget2,
			ended:  Ended{Outcome: Cancelled, ExitCodes: codes(143), By: "alice"},
			want:   Decision{Action: Cancel, Status: "CANCELLED", Rule: RuleCancelled, Reason: "cancelled by alice"},
		},
		{
			name:     "cancel of a middle task ends the job too",
			policy:   budget2,
			ended:    Ended{Outcome: Cancelled},
			lastTask: false,
			want:     Decision{Action: Cancel, Status: "CANCELLED", Rule: RuleCancelled, Reason: "cancelled by user"},
		},
		{
			name:     "launch failure ends FAILED_NO_RESOURCE with the placement reason",
			policy:   budget2,
			counters: Counters{RecoveryCount: 1},
			ended:    Ended{Outcome: LaunchFailed, Detail: "no resources after 3 rounds; tried local/local-a 3 times: no capacity"},
			want: Decision{Action: Fail, Counters: Counters{RecoveryCount: 1}, Status: "FAILED_NO_RESOURCE", Rule: RuleLaunchFailed,
				Reason: "no resources after 3 rounds; tried local/local-a 3 times: no capacity"},
		},
		{
			name:   "launch failure without detail",
			policy: budget2,
			ended:  Ended{Outcome: LaunchFailed},
			want:   Decision{Action: Fail, Status: "FAILED_NO_RESOURCE", Rule: RuleLaunchFailed, Reason: "launch failed"},
		},
		{
			name:   "a launch no retry can fix ends FAILED_PRECHECKS at once",
			policy: budget2,
			ended:  Ended{Outcome: LaunchFailed, Prechecks: true, Detail: "launch in aws/us-east-1/us-east-1a: no credentials"},
			want: Decision{Action: Fail, Status: "FAILED_PRECHECKS", Rule: RulePrechecks,
				Reason: "launch in aws/us-east-1/us-east-1a: no credentials"},
		},
		{
			name:   "prechecks without detail",
			policy: budget2,
			ended:  Ended{Outcome: LaunchFailed, Prechecks: true},
			want:   Decision{Action: Fail, Status: "FAILED_PRECHECKS", Rule: RulePrechecks, Reason: "the request cannot be launched"},
		},
		{
			name:   "prechecks means nothing for other outcomes",
			policy: budget2,
			ended:  Ended{Outcome: Preempted, Prechecks: true, Placement: zoneA},
			want:   Decision{Action: Recover, Counters: Counters{RecoveryCount: 1, LossRecoveries: 1}, Rule: RulePreempted, Reason: "preemption in local/local-a"},
		},
		{
			name:     "controller error ends FAILED_CONTROLLER with the error",
			policy:   budget2,
			counters: Counters{RecoveryCount: 3, RestartsOnErrors: 1},
			ended:    Ended{Outcome: ControllerError, Detail: "job 7 spec: unexpected end of JSON input"},
			want: Decision{Action: Fail, Counters: Counters{RecoveryCount: 3, RestartsOnErrors: 1}, Status: "FAILED_CONTROLLER",
				Rule: RuleControllerError, Reason: "controller error: job 7 spec: unexpected end of JSON input"},
		},
		{
			name:   "controller error without detail",
			policy: budget2,
			ended:  Ended{Outcome: ControllerError},
			want:   Decision{Action: Fail, Status: "FAILED_CONTROLLER", Rule: RuleControllerError, Reason: "controller error"},
		},
		{
			name:   "unknown outcome is never silent",
			policy: budget2,
			ended:  Ended{Outcome: "exploded"},
			want: Decision{Action: Fail, Status: "FAILED_CONTROLLER", Rule: RuleUnknownOutcome,
				Reason: `attempt ended with unknown outcome "exploded"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.policy, tt.counters, tt.ended, tt.lastTask)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A code that always exits with a listed code restarts forever and never
// spends the budget; the back-off, not a limit, keeps it from spinning.
func TestDecideListedCodeNeverConsumesBudget(t *testing.T) {
	p := Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}}
	c := Counters{RestartsOnErrors: 1}
	for i := 1; i <= 1000; i++ {
		d := Decide(p, c, Ended{Outcome: UserFailure, ExitCodes: codes(29)}, true)
		want := Decision{Action: Restart, Counters: Counters{RecoveryCount: i, RestartsOnErrors: 1},
			Rule: RuleExitCodeMatched, Reason: "exit code 29 matched recover_on_exit_codes [29]"}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Fatalf("restart %d mismatch (-want +got):\n%s", i, diff)
		}
		c = d.Counters
	}
}

// Walks a job through preemptions and failures, threading the counters as
// the controller persists them: max_restarts_on_errors 2 means 3 runs end in
// unlisted failures before FAILED, however many preemptions come between.
func TestDecideSequence(t *testing.T) {
	p := Policy{MaxRestartsOnErrors: 2, RecoverOnExitCodes: []int{29}}
	steps := []struct {
		ended Ended
		want  Action
	}{
		{Ended{Outcome: UserFailure, ExitCodes: codes(1)}, Restart},
		{Ended{Outcome: Preempted, Placement: zoneA}, Recover},
		{Ended{Outcome: UserFailure, ExitCodes: codes(29)}, Restart},
		{Ended{Outcome: UserFailure, ExitCodes: codes(1)}, Restart},
		{Ended{Outcome: NodeLost, Placement: zoneA}, Recover},
		{Ended{Outcome: UserFailure, ExitCodes: codes(1)}, Fail},
	}
	var c Counters
	var got []Action
	for _, s := range steps {
		d := Decide(p, c, s.ended, true)
		got = append(got, d.Action)
		c = d.Counters
	}
	var want []Action
	for _, s := range steps {
		want = append(want, s.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Counters{RecoveryCount: 3, LossRecoveries: 2, RestartsOnErrors: 3}, c); diff != "" {
		t.Errorf("final counters mismatch (-want +got):\n%s", diff)
	}
}

func TestDecideEveryDecisionHasReason(t *testing.T) {
	outcomes := []Outcome{Succeeded, UserFailure, SetupFailure, Preempted, NodeLost, LaunchFailed, Cancelled, ControllerError, TimedOut, BudgetSpent, PreemptedByPriority, ""}
	for _, o := range outcomes {
		for _, last := range []bool{false, true} {
			for _, prechecks := range []bool{false, true} {
				d := Decide(Policy{}, Counters{}, Ended{Outcome: o, Prechecks: prechecks}, last)
				if d.Reason == "" || d.Rule == "" || d.Action == "" {
					t.Errorf("Decide(%q, last=%v) = %+v: want an action, a rule and a reason", o, last, d)
				}
				terminal := d.Action == Succeed || d.Action == Fail || d.Action == Cancel
				if terminal != (d.Status != "") || (d.Status != "" && !d.Status.Terminal()) {
					t.Errorf("Decide(%q, last=%v): action %s with status %q; want a terminal status exactly for terminal actions", o, last, d.Action, d.Status)
				}
			}
		}
	}
}

func TestOverTime(t *testing.T) {
	submitted := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		limit      time.Duration
		now        time.Time
		wantReason string
		wantOver   bool
	}{
		{"no limit never runs out", 0, submitted.Add(1000 * time.Hour), "", false},
		{"just before the limit", 12 * time.Hour, submitted.Add(12*time.Hour - time.Nanosecond), "", false},
		{"at the limit", 12 * time.Hour, submitted.Add(12 * time.Hour), "max_duration 12h exceeded", true},
		{"well past it, in minutes", 90 * time.Minute, submitted.Add(5 * time.Hour), "max_duration 1h30m exceeded", true},
		{"a clock behind the submission is not over", time.Minute, submitted.Add(-time.Hour), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, over := OverTime(Policy{MaxDuration: tt.limit}, submitted, tt.now)
			if reason != tt.wantReason || over != tt.wantOver {
				t.Errorf("OverTime = %q, %v; want %q, %v", reason, over, tt.wantReason, tt.wantOver)
			}
		})
	}
}

func TestPolicyFromLimits(t *testing.T) {
	three := 3
	got := PolicyFrom(schema.JobRecovery{Strategy: schema.NoRecovery, MaxRecoveries: &three, MaxDuration: schema.Duration(time.Hour)})
	want := Policy{NoRecovery: true, MaxRecoveries: 3, MaxDuration: time.Hour}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PolicyFrom() mismatch (-want +got):\n%s", diff)
	}
}

func TestPolicyFrom(t *testing.T) {
	jr := schema.JobRecovery{Strategy: schema.Failover, MaxRestartsOnErrors: 3, RecoverOnExitCodes: []int{29, 137}}
	got := PolicyFrom(jr)
	want := Policy{MaxRestartsOnErrors: 3, RecoverOnExitCodes: []int{29, 137}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PolicyFrom() mismatch (-want +got):\n%s", diff)
	}
	// The policy owns its list: later edits of the task do not leak in.
	jr.RecoverOnExitCodes[0] = 1
	if got.RecoverOnExitCodes[0] != 29 {
		t.Errorf("PolicyFrom shares the exit code list with its input")
	}
	if diff := cmp.Diff(Policy{}, PolicyFrom(schema.JobRecovery{MaxRestartsOnErrors: -1})); diff != "" {
		t.Errorf("PolicyFrom(negative) mismatch (-want +got):\n%s", diff)
	}
}

func TestCountersRetries(t *testing.T) {
	// The first restart or recovery after a decision waits Delay(1).
	for _, e := range []Ended{
		{Outcome: Preempted},
		{Outcome: UserFailure, ExitCodes: codes(29)},
		{Outcome: UserFailure, ExitCodes: codes(1)},
	} {
		d := Decide(Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}}, Counters{}, e, true)
		if got := d.Counters.Retries(); got != 1 {
			t.Errorf("after %v: Retries() = %d, want 1", e.Outcome, got)
		}
	}
}
