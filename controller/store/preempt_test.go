package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// A pass that preempts asks the victim to yield in its own transaction;
// the victim's attempt ending preempted by priority sends it back to wait,
// not admitted, its counters untouched; the waiting job is admitted once
// it has.
func TestAdmitPreempts(t *testing.T) { onEach(t, testAdmitPreempts) }

func testAdmitPreempts(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	limits := strategy.Limits{Server: strategy.Amounts{strategy.Jobs: 1}}
	decide := func(f AdmissionFacts) []strategy.Placed {
		return strategy.Admit(strategy.AdmitInput{Waiting: f.Waiting, Held: f.Held, Admitted: f.Admitted, Limits: limits,
			Preempt: true})
	}
	newJob := func(owner string, prio int) int64 {
		id, err := s.CreateJob(ctx, &Job{Name: owner, Spec: []byte(`{}`), Owner: owner, Priority: prio}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	low := newJob("alice", 100)
	if res, err := s.Admit(ctx, time.Time{}, decide); err != nil || fmt.Sprint(res.Admitted) != fmt.Sprint([]int64{low}) {
		t.Fatalf("admitted %v (%v), want the low job", res.Admitted, err)
	}
	a, err := s.NewAttempt(ctx, low, 0, clusterName(low, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	running(t, s, a)
	high := newJob("bob", 900)
	res, err := s.Admit(ctx, time.Time{}, decide)
	if err != nil || len(res.Admitted) != 0 || res.Preempted[low] != high {
		t.Fatalf("pass: %+v (%v), want the low job asked to yield to the high one", res, err)
	}
	j, _ := s.Job(ctx, low)
	want := fmt.Sprintf("preempted by priority: job %d (priority 900) takes its place under the server limit", high)
	if j.YieldFor == nil || *j.YieldFor != high || j.YieldReason != want || j.Status != lifecycle.Running {
		t.Fatalf("low job: yield_for %v reason %q status %s, want %d, %q, RUNNING", j.YieldFor, j.YieldReason, j.Status, high, want)
	}
	h, _ := s.Job(ctx, high)
	if wantWait := fmt.Sprintf("waiting: preempting job %d (priority 100) for room under the server limit", low); h.WaitReason != wantWait {
		t.Errorf("high job waits with %q, want %q", h.WaitReason, wantWait)
	}
	// While it stops, nothing more happens: no second request, no admission.
	if res, err := s.Admit(ctx, time.Time{}, decide); err != nil || len(res.Admitted) != 0 || len(res.Preempted) != 0 {
		t.Fatalf("second pass: %+v (%v), want nothing", res, err)
	}
	d := strategy.Decide(strategy.Policy{}, strategy.Counters{}, strategy.Ended{Outcome: strategy.PreemptedByPriority, Detail: j.YieldReason}, true)
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.PreemptedByPriority, Reason: j.YieldReason}, d, Facts{}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, low)
	if j.Status != lifecycle.Pending || j.AdmittedAt != nil || j.YieldFor != nil || j.StatusReason != want || j.RestartsOnErrors != 0 || j.RecoveryCount != 0 {
		t.Fatalf("low job after its stop: %s admitted %v yield %v reason %q restarts %d recoveries %d; want PENDING, waiting, %q, no counts",
			j.Status, j.AdmittedAt, j.YieldFor, j.StatusReason, j.RestartsOnErrors, j.RecoveryCount, want)
	}
	atts, _ := s.Attempts(ctx, low)
	if len(atts) != 1 || atts[0].Outcome != string(strategy.PreemptedByPriority) || atts[0].Action != string(strategy.Requeue) || atts[0].Reason != want {
		t.Errorf("attempts %+v, want one ended preempted_by_priority, requeue, %q", atts, want)
	}
	res, err = s.Admit(ctx, time.Time{}, decide)
	if err != nil || fmt.Sprint(res.Admitted) != fmt.Sprint([]int64{high}) {
		t.Fatalf("admitted %v (%v), want the high job now", res.Admitted, err)
	}
	if j, _ := s.Job(ctx, low); j.WaitReason == "" || j.WaitPlace != 1 {
		t.Errorf("low job waits with %q at %d, want a reason at 1", j.WaitReason, j.WaitPlace)
	}
}

// A job asked to yield with no attempt open (admitted, not yet started)
// goes straight back to wait; one with an attempt open is refused.
func TestRequeue(t *testing.T) { onEach(t, testRequeue) }

func testRequeue(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, a := runningAttempt(t, s)
	if err := s.Requeue(ctx, id, "preempted"); err == nil {
		t.Fatal("requeued a job with an attempt open")
	}
	d := strategy.Decide(strategy.Policy{}, strategy.Counters{}, strategy.Ended{Outcome: strategy.UserFailure}, true)
	d.Action, d.Status = strategy.Restart, ""
	if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.UserFailure}, d, Facts{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Requeue(ctx, id, "preempted"); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Job(ctx, id)
	if j.Status != lifecycle.Pending || j.StatusReason != "preempted" || j.AdmittedAt != nil {
		t.Errorf("job %s %q admitted %v, want PENDING, waiting", j.Status, j.StatusReason, j.AdmittedAt)
	}
	if ts, _ := s.Tasks(ctx, id); ts[0].Status != lifecycle.Pending {
		t.Errorf("task %s, want PENDING", ts[0].Status)
	}
}
