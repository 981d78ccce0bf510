package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

func progress(n int64) *int64 { return &n }

func limit(n int) *int { return &n }

func TestProgressOf(t *testing.T) {
	tests := []struct {
		name     string
		attempts []AttemptProgress
		want     ProgressState
	}{
		{name: "no attempts", want: ProgressState{}},
		{
			name: "restarts without any report count in a row",
			attempts: []AttemptProgress{
				{Attempt: 1, Restarted: true}, {Attempt: 2, Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 2},
		},
		{
			name: "a restart after progress starts the count again",
			attempts: []AttemptProgress{
				{Attempt: 1, Restarted: true},
				{Attempt: 2, Progress: progress(100), Restarted: true},
				{Attempt: 3, Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 1, Best: 100, BestAttempt: 2},
		},
		{
			name: "redoing steps below the best is no progress",
			attempts: []AttemptProgress{
				{Attempt: 1, Progress: progress(500), Restarted: true},
				{Attempt: 2, Progress: progress(400), Restarted: true},
				{Attempt: 3, Progress: progress(500), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 2, Best: 500, BestAttempt: 1},
		},
		{
			name: "zero is no progress",
			attempts: []AttemptProgress{
				{Attempt: 1, Progress: progress(0), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 1},
		},
		{
			name: "an attempt that did not restart adds nothing but its progress",
			attempts: []AttemptProgress{
				{Attempt: 1, Restarted: true},
				{Attempt: 2, Progress: progress(7)},
			},
			want: ProgressState{RestartsWithoutProgress: 1, Best: 7, BestAttempt: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ProgressOf(tt.attempts)); diff != "" {
				t.Errorf("ProgressOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideCrashLoop(t *testing.T) {
	one := Policy{MaxRecoveries: 0, MaxRestartsOnErrors: 10, MaxRestartsWithoutProgress: limit(1)}
	three := Policy{MaxRestartsOnErrors: 10, RecoverOnExitCodes: []int{29}, MaxRestartsWithoutProgress: limit(3)}
	atBest := ProgressState{RestartsWithoutProgress: 3, Best: 41200, BestAttempt: 5}

	tests := []struct {
		name     string
		policy   Policy
		counters Counters
		ended    Ended
		want     Decision
	}{
		{
			name:   "a preemption after progress recovers and starts the count again",
			policy: one,
			counters: Counters{RecoveryCount: 4, LossRecoveries: 4,
				Progress: ProgressState{RestartsWithoutProgress: 1, Best: 400, BestAttempt: 4}},
			ended: Ended{Outcome: Preempted, Placement: zoneA, Attempt: 5, Progress: progress(500)},
			want: Decision{Action: Recover, Rule: RulePreempted, Reason: "preemption in local/local-a",
				Counters: Counters{RecoveryCount: 5, LossRecoveries: 5, Progress: ProgressState{Best: 500, BestAttempt: 5}}},
		},
		{
			name:   "the first restart without progress is within a limit of 1",
			policy: one,
			ended:  Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 1},
			want: Decision{Action: Restart, Rule: RuleRestartOnError, Reason: "exit code 1; restart 1/10 on errors",
				Counters: Counters{RestartsOnErrors: 1, Progress: ProgressState{RestartsWithoutProgress: 1}}},
		},
		{
			name:     "the second in a row without progress ends the job",
			policy:   one,
			counters: Counters{RestartsOnErrors: 1, Progress: ProgressState{RestartsWithoutProgress: 1}},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 2},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleCrashLoop,
				Reason:   "crash loop: 1 restart without progress (no progress reported)",
				Counters: Counters{RestartsOnErrors: 1, Progress: ProgressState{RestartsWithoutProgress: 1}}},
		},
		{
			name:     "past the limit, with the last progress named",
			policy:   three,
			counters: Counters{RecoveryCount: 8, Progress: atBest},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(29), Attempt: 9, Progress: progress(41000)},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleCrashLoop,
				Reason:   "crash loop: 3 restarts without progress (last progress 41200 at attempt 5)",
				Counters: Counters{RecoveryCount: 8, Progress: atBest}},
		},
		{
			name:     "preemptions count too",
			policy:   three,
			counters: Counters{RecoveryCount: 8, LossRecoveries: 8, Progress: atBest},
			ended:    Ended{Outcome: Preempted, Placement: zoneA, Attempt: 9},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleCrashLoop,
				Reason:   "crash loop: 3 restarts without progress (last progress 41200 at attempt 5)",
				Counters: Counters{RecoveryCount: 8, LossRecoveries: 8, Progress: atBest}},
		},
		{
			name:     "progress at the limit goes on",
			policy:   three,
			counters: Counters{RecoveryCount: 8, Progress: atBest},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(29), Attempt: 9, Progress: progress(41201)},
			want: Decision{Action: Restart, Rule: RuleExitCodeMatched, Reason: "exit code 29 matched recover_on_exit_codes [29]",
				Counters: Counters{RecoveryCount: 9, Progress: ProgressState{Best: 41201, BestAttempt: 9}}},
		},
		{
			name:   "a limit of 0 allows no restart without progress",
			policy: Policy{MaxRestartsWithoutProgress: limit(0)},
			ended:  Ended{Outcome: NodeLost, Placement: zoneA, Attempt: 1},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleCrashLoop,
				Reason: "crash loop: 0 restarts without progress (no progress reported)"},
		},
		{
			name:     "without a limit nothing is counted",
			policy:   Policy{MaxRestartsOnErrors: 10},
			counters: Counters{RestartsOnErrors: 5, Progress: atBest},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 9},
			want: Decision{Action: Restart, Rule: RuleRestartOnError, Reason: "exit code 1; restart 6/10 on errors",
				Counters: Counters{RestartsOnErrors: 6, Progress: atBest}},
		},
		{
			name:     "an ending decision is left as it is",
			policy:   one,
			counters: Counters{Progress: ProgressState{RestartsWithoutProgress: 1}},
			ended:    Ended{Outcome: Succeeded, ExitCodes: codes(0), Attempt: 2},
			want: Decision{Action: Succeed, Status: lifecycle.Succeeded, Rule: RuleJobSucceeded, Reason: "succeeded",
				Counters: Counters{Progress: ProgressState{RestartsWithoutProgress: 1}}},
		},
		{
			name:     "the error budget still ends the job first",
			policy:   Policy{MaxRestartsOnErrors: 1, MaxRestartsWithoutProgress: limit(5)},
			counters: Counters{RestartsOnErrors: 1},
			ended:    Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 2, Progress: progress(10)},
			want: Decision{Action: Fail, Status: lifecycle.Failed, Rule: RuleNoRestartsLeft,
				Reason:   "exit code 1; no restarts left (max_restarts_on_errors 1)",
				Counters: Counters{RestartsOnErrors: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.policy, tt.counters, tt.ended, true)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// A checkpoint newer than any counted before, written during the attempt,
// is progress as a higher number is.
func TestCheckpointProgress(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	t0 := clock.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ckpt := func(key string, d time.Duration) *Checkpoint { return &Checkpoint{Key: key, Modified: at(d)} }
	tests := []struct {
		name     string
		attempts []AttemptProgress
		want     ProgressState
	}{
		{
			name: "a newer checkpoint at each restart is progress each time",
			attempts: []AttemptProgress{
				{Attempt: 1, Started: at(0), Checkpoint: ckpt("s3://b/ckpt-1", 10*time.Minute), Restarted: true},
				{Attempt: 2, Started: at(20 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-2", 30*time.Minute), Restarted: true},
			},
			want: ProgressState{Checkpoint: *ckpt("s3://b/ckpt-2", 30*time.Minute), CheckpointAttempt: 2},
		},
		{
			name: "the same checkpoint again is none",
			attempts: []AttemptProgress{
				{Attempt: 1, Started: at(0), Checkpoint: ckpt("s3://b/ckpt-1", 10*time.Minute), Restarted: true},
				{Attempt: 2, Started: at(20 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-1", 10*time.Minute), Restarted: true},
				{Attempt: 3, Started: at(40 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-1", 10*time.Minute), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 2, Checkpoint: *ckpt("s3://b/ckpt-1", 10*time.Minute), CheckpointAttempt: 1},
		},
		{
			name: "an object older than the attempt (there before it) is none",
			attempts: []AttemptProgress{
				{Attempt: 1, Started: at(time.Hour), Checkpoint: ckpt("s3://b/data", 0), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 1},
		},
		{
			name: "no bucket seen is none",
			attempts: []AttemptProgress{
				{Attempt: 1, Started: at(0), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 1},
		},
		{
			name: "a number or a checkpoint: either is progress",
			attempts: []AttemptProgress{
				{Attempt: 1, Started: at(0), Progress: progress(100), Restarted: true},
				{Attempt: 2, Started: at(20 * time.Minute), Progress: progress(100), Checkpoint: ckpt("gs://b/c", 25*time.Minute), Restarted: true},
				{Attempt: 3, Started: at(40 * time.Minute), Progress: progress(90), Checkpoint: ckpt("gs://b/c", 25*time.Minute), Restarted: true},
			},
			want: ProgressState{RestartsWithoutProgress: 1, Best: 100, BestAttempt: 1, Checkpoint: *ckpt("gs://b/c", 25*time.Minute), CheckpointAttempt: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ProgressOf(tt.attempts)); diff != "" {
				t.Errorf("ProgressOf (-want +got):\n%s", diff)
			}
		})
	}

	// The crash loop names the last checkpoint when it came after the
	// last number.
	s := ProgressOf([]AttemptProgress{
		{Attempt: 1, Started: at(0), Progress: progress(100), Restarted: true},
		{Attempt: 2, Started: at(20 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-2", 30*time.Minute), Restarted: true},
		{Attempt: 3, Started: at(40 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-2", 30*time.Minute), Restarted: true},
	})
	clock.Advance(time.Hour)
	d := Decide(Policy{MaxRestartsOnErrors: 10, MaxRestartsWithoutProgress: limit(1)}, Counters{RestartsOnErrors: 3, Progress: s},
		Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 4, Started: clock.Now(), Checkpoint: ckpt("s3://b/ckpt-2", 30*time.Minute)}, true)
	if want := "crash loop: 1 restart without progress (last checkpoint s3://b/ckpt-2 at attempt 2)"; d.Action != Fail || d.Reason != want {
		t.Errorf("Decide = %s %q, want fail %q", d.Action, d.Reason, want)
	}
	// A newer one written in the attempt goes on.
	d = Decide(Policy{MaxRestartsOnErrors: 10, MaxRestartsWithoutProgress: limit(1)}, Counters{RestartsOnErrors: 3, Progress: s},
		Ended{Outcome: UserFailure, ExitCodes: codes(1), Attempt: 4, Started: at(50 * time.Minute), Checkpoint: ckpt("s3://b/ckpt-3", 55*time.Minute)}, true)
	if d.Action != Restart || d.Counters.Progress.CheckpointAttempt != 4 || d.Counters.Progress.RestartsWithoutProgress != 0 {
		t.Errorf("Decide with a newer checkpoint = %+v, want a restart counting it", d)
	}
}

func TestPolicyFromProgressLimit(t *testing.T) {
	if p := PolicyFrom(schema.JobRecovery{}); p.MaxRestartsWithoutProgress != nil {
		t.Errorf("unset: got %d, want no limit", *p.MaxRestartsWithoutProgress)
	}
	n := 3
	r := schema.JobRecovery{MaxRestartsWithoutProgress: &n}
	p := PolicyFrom(r)
	n = 7
	if p.MaxRestartsWithoutProgress == nil || *p.MaxRestartsWithoutProgress != 3 {
		t.Errorf("got %v, want 3, a copy", p.MaxRestartsWithoutProgress)
	}
}
