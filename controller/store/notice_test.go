package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// runningAttempt makes a job with one task and a running attempt on two
// nodes.
func runningAttempt(t *testing.T, s *Store) (int64, *Attempt) {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateJob(ctx, &Job{Name: "spot", Spec: []byte(`{}`)}, []NewTask{{Name: "spot"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkLaunched(ctx, a.ID, "aws", "us-east-1", "us-east-1a", []string{"i-1", "i-2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	return id, a
}

func TestRecordNotice(t *testing.T) { onEach(t, testRecordNotice) }

func testRecordNotice(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, a := runningAttempt(t, s)
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	deadline := at.Add(2 * time.Minute)
	rebalance := Notice{Kind: NoticeRebalance, Source: "aws-imds", At: at}
	spot := Notice{Kind: "spot-interruption", Source: "aws-imds", At: at.Add(time.Minute), Deadline: &deadline}
	for _, step := range []struct {
		n     Notice
		wrote bool
		want  Notice
	}{
		{rebalance, true, rebalance},
		{rebalance, false, rebalance}, // heard again: the first is kept
		{spot, true, spot},            // a notice that ends the node replaces a rebalance
		{Notice{Kind: "spot-interruption", Source: "aws-imds", At: at.Add(2 * time.Minute)}, false, spot},
		{rebalance, false, spot},
	} {
		wrote, err := s.RecordNotice(ctx, a, step.n)
		if err != nil {
			t.Fatal(err)
		}
		if wrote != step.wrote {
			t.Errorf("record %+v: wrote %v, want %v", step.n, wrote, step.wrote)
		}
		got, _ := s.LastAttempt(ctx, id, 0)
		if diff := cmp.Diff(&step.want, got.Notice); diff != "" {
			t.Errorf("after %+v, stored notice (-want +got):\n%s", step.n, diff)
		}
	}
}

func TestReplaceThenEnd(t *testing.T) { onEach(t, testReplaceThenEnd) }

func testReplaceThenEnd(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, a1 := runningAttempt(t, s)
	recover := strategy.Decision{Action: strategy.Recover, Counters: strategy.Counters{RecoveryCount: 1},
		Reason: "preemption notice in aws/us-east-1/us-east-1a"}
	if err := s.ReplaceAttempt(ctx, a1, recover, Facts{}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceAttempt(ctx, a1, recover, Facts{}); !errors.Is(err, ErrReplaced) {
		t.Errorf("second replacement: %v, want ErrReplaced", err)
	}
	j, _ := s.Job(ctx, id)
	if j.Status != lifecycle.Recovering || j.RecoveryCount != 1 || j.StatusReason != recover.Reason || j.NextActionAt != nil {
		t.Errorf("job after the replacement: %+v", j)
	}
	old, _ := s.LastAttempt(ctx, id, 0)
	if old.State != lifecycle.AttemptRunning || old.ReplacedAt == nil || old.Action != "recover" || old.Decision != recover.Reason || old.EndedAt != nil {
		t.Errorf("replaced attempt: %+v, want still running, with the decision and its time", old)
	}
	// The replaced attempt does not keep the job from its next attempt.
	a2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Recovering)
	if err != nil {
		t.Fatalf("new attempt beside the replaced one: %v", err)
	}
	if a2.Attempt != 2 {
		t.Errorf("replacement is attempt %d, want 2", a2.Attempt)
	}
	// But two unreplaced attempts never run at once.
	if _, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Recovering); !errors.Is(err, ErrOpenAttempt) {
		t.Errorf("third attempt: %v, want ErrOpenAttempt", err)
	}
	if err := s.MarkLaunched(ctx, a2.ID, "aws", "us-east-1", "us-east-1b", []string{"i-3", "i-4"}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ctx, a2); err != nil {
		t.Fatal(err)
	}
	o := Observed{Outcome: strategy.Preempted, ExitCodes: []*int{nil, nil}, Reason: "node 0 went away after its notice"}
	if err := s.EndReplaced(ctx, old, o); err != nil {
		t.Fatal(err)
	}
	if err := s.EndReplaced(ctx, old, o); !errors.Is(err, ErrAttemptEnded) {
		t.Errorf("second end: %v, want ErrAttemptEnded", err)
	}
	as, _ := s.Attempts(ctx, id)
	if a := as[0]; a.State != lifecycle.AttemptEnded || a.Outcome != "preempted" || a.Reason != o.Reason || a.Action != "recover" || a.EndedAt == nil {
		t.Errorf("ended replaced attempt: %+v", a)
	}
	j2, _ := s.Job(ctx, id)
	if j2.Status != lifecycle.Running || j2.RecoveryCount != 1 {
		t.Errorf("job after the old attempt ended: %+v, want RUNNING (its replacement) with 1 recovery", j2)
	}
	// EndReplaced ends only replaced attempts.
	if err := s.EndReplaced(ctx, a2, o); !errors.Is(err, ErrAttemptEnded) {
		t.Errorf("EndReplaced of an attempt never replaced: %v, want an error", err)
	}
}

func TestReplaceRefused(t *testing.T) { onEach(t, testReplaceRefused) }

func testReplaceRefused(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	_, a := runningAttempt(t, s)
	if err := s.ReplaceAttempt(ctx, a, strategy.Decision{Action: strategy.Restart}, Facts{}); err == nil {
		t.Error("a replacement by a restart was accepted")
	}
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.Succeeded}, strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded}, Facts{}); err != nil {
		t.Fatal(err)
	}
	err := s.ReplaceAttempt(ctx, a, strategy.Decision{Action: strategy.Recover, Reason: "x"}, Facts{})
	if !errors.Is(err, ErrAttemptEnded) {
		t.Errorf("replacing an ended attempt: %v, want ErrAttemptEnded", err)
	}
}
