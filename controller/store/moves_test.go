package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// state is everything the store holds about one job.
type state struct {
	Job      *Job
	Tasks    []*Task
	Attempts []*Attempt
	Failures []*KnownFailure
}

func stateOf(t *testing.T, s *Store, id int64) state {
	t.Helper()
	ctx := context.Background()
	j, err := s.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := s.Tasks(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	as, err := s.Attempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := s.KnownFailures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return state{j, tasks, as, fs}
}

// A change that would move a status in a way the lifecycle does not list
// is refused with the move named, and leaves the store as it was.
func TestForbiddenMovesAreRefused(t *testing.T) { onEach(t, testForbiddenMovesAreRefused) }

func testForbiddenMovesAreRefused(t *testing.T, b backend) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// setup brings a new job to where the change is tried: a is its
		// open attempt.
		setup  func(t *testing.T, s *Store, a *Attempt)
		change func(s *Store, a *Attempt) error
		want   string
	}{
		{
			name:  "a running job does not wait for capacity",
			setup: running,
			change: func(s *Store, a *Attempt) error {
				next := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				return s.SetWaiting(ctx, a.JobID, a.TaskIdx, "no capacity", &next, 3)
			},
			want: "job 1: RUNNING → PENDING is not a move a job makes",
		},
		{
			name:  "a job that never ran does not succeed",
			setup: func(*testing.T, *Store, *Attempt) {},
			change: func(s *Store, a *Attempt) error {
				// It would clear the known failure of k1.
				return s.EndAttempt(ctx, a, Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}},
					strategy.Decision{Action: strategy.Succeed, Counters: strategy.Counters{RecoveryCount: 4}, Status: lifecycle.Succeeded, Reason: "succeeded"},
					Facts{})
			},
			want: "job 1: STARTING → SUCCEEDED is not a move a job makes",
		},
		{
			name: "a job being cancelled does not fail its setup before it ran",
			setup: func(t *testing.T, s *Store, a *Attempt) {
				if _, err := s.RequestCancel(ctx, []int64{a.JobID}); err != nil {
					t.Fatal(err)
				}
			},
			change: func(s *Store, a *Attempt) error {
				// It would record k1 as a known failure of this job.
				return s.EndAttempt(ctx, a, Observed{Outcome: strategy.SetupFailure, ExitCodes: []*int{code(2)}},
					strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.FailedSetup,
						Reason: "setup exit code 2; no restarts left (max_restarts_on_errors 0)"},
					Facts{TaskName: "j", LogPath: "/logs"})
			},
			want: "job 1 task 0: STARTING → FAILED_SETUP is not a move a task makes",
		},
		{
			name:  "an attempt does not run before its cluster is up",
			setup: func(*testing.T, *Store, *Attempt) {},
			change: func(s *Store, a *Attempt) error {
				return s.MarkRunning(ctx, a)
			},
			want: "job 1 task 0 attempt 1: launching → running is not a move an attempt makes",
		},
		{
			name:  "a running attempt is not launched again",
			setup: running,
			change: func(s *Store, a *Attempt) error {
				return s.MarkLaunched(ctx, a.ID, "local", "local", "local-b", []string{"other"})
			},
			want: "job 1 task 0 attempt 1: running → starting is not a move an attempt makes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t, b)
			id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), InputKey: "k1"}, []NewTask{{}, {}})
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(t, s, a)
			if err := s.tx(ctx, func(tx *dbTx) error {
				return recordFailure(ctx, tx, &KnownFailure{InputKey: "k1", JobID: 99, Status: lifecycle.Failed}, time.Now())
			}); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, s, id)
			err = tc.change(s, a)
			if !errors.Is(err, ErrNotAMove) {
				t.Fatalf("got %v, want ErrNotAMove", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if diff := cmp.Diff(before, stateOf(t, s, id)); diff != "" {
				t.Errorf("a refused change wrote (-before +after):\n%s", diff)
			}
		})
	}
}

// EndAttempt derives every status from the decision, in one place.
func TestEndAttemptFollowsTheDecision(t *testing.T) { onEach(t, testEndAttemptFollowsTheDecision) }

func testEndAttemptFollowsTheDecision(t *testing.T, b backend) {
	ctx := context.Background()
	seenFailed := Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1)}, Reason: "node 0 exited 1"}
	for _, tc := range []struct {
		name      string
		lastTask  bool
		seen      Observed
		d         strategy.Decision
		job       lifecycle.Status
		tasks     []lifecycle.Status
		current   int
		failure   string
		reason    string // the job's status reason
		preempted string // the task's preempted_in
		known     *KnownFailure
	}{
		{
			name: "recover keeps where the attempt ran",
			seen: Observed{Outcome: strategy.Preempted, Reason: "node 0 preempted in local/local-a"},
			d:    strategy.Decision{Action: strategy.Recover, Counters: strategy.Counters{RecoveryCount: 1}, Reason: "preemption in local/local-a"},
			job:  lifecycle.Recovering, tasks: []lifecycle.Status{lifecycle.Recovering, lifecycle.Pending},
			reason: "preemption in local/local-a", preempted: `{"cloud":"local","region":"local","zone":"local-a"}`,
			known: &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name: "restart",
			seen: seenFailed,
			d:    strategy.Decision{Action: strategy.Restart, Counters: strategy.Counters{RestartsOnErrors: 1}, Reason: "exit code 1; restart 1/2 on errors"},
			job:  lifecycle.Recovering, tasks: []lifecycle.Status{lifecycle.Recovering, lifecycle.Pending},
			reason: "exit code 1; restart 1/2 on errors",
			known:  &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name: "next task",
			seen: Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}},
			d:    strategy.Decision{Action: strategy.NextTask, Reason: "task succeeded; starting the next task"},
			job:  lifecycle.Starting, tasks: []lifecycle.Status{lifecycle.Succeeded, lifecycle.Pending}, current: 1,
			known: &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name:     "success forgets the inputs' known failure",
			lastTask: true,
			seen:     Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}},
			d:        strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "succeeded"},
			job:      lifecycle.Succeeded, tasks: []lifecycle.Status{lifecycle.Succeeded, lifecycle.Succeeded}, current: 1,
		},
		{
			name: "failure records the inputs as a known failure",
			seen: seenFailed,
			d: strategy.Decision{Action: strategy.Fail, Counters: strategy.Counters{RestartsOnErrors: 1}, Status: lifecycle.Failed,
				Reason: "exit code 1; no restarts left (max_restarts_on_errors 0)"},
			job: lifecycle.Failed, tasks: []lifecycle.Status{lifecycle.Failed, lifecycle.Cancelled},
			failure: "exit code 1; no restarts left (max_restarts_on_errors 0)",
			known:   &KnownFailure{InputKey: "key", JobID: 1, TaskName: "t0", Status: lifecycle.Failed, ExitCodes: []*int{code(1)}, LogPath: "/logs/1", JobName: "j", Task: code(0)},
		},
		{
			name: "cancel leaves no failure reason",
			seen: Observed{Outcome: strategy.Cancelled, ExitCodes: []*int{code(143)}, Reason: "cancelled by user"},
			d:    cancelled,
			job:  lifecycle.Cancelled, tasks: []lifecycle.Status{lifecycle.Cancelled, lifecycle.Cancelled},
			known: &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name: "FAILED at max_duration is not a known failure",
			seen: Observed{Outcome: strategy.TimedOut, ExitCodes: []*int{code(143)}, Reason: "max_duration 2h exceeded"},
			d:    strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "max_duration 2h exceeded"},
			job:  lifecycle.Failed, tasks: []lifecycle.Status{lifecycle.Failed, lifecycle.Cancelled},
			failure: "max_duration 2h exceeded",
			known:   &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name: "FAILED at a preemption with strategy NONE is not a known failure",
			seen: Observed{Outcome: strategy.Preempted, Reason: "node 0 preempted in local/local-a"},
			d: strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed,
				Reason: "preemption in local/local-a; job_recovery is NONE, not recovering"},
			job: lifecycle.Failed, tasks: []lifecycle.Status{lifecycle.Failed, lifecycle.Cancelled},
			failure: "preemption in local/local-a; job_recovery is NONE, not recovering",
			known:   &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
		{
			name: "a controller error is not a known failure",
			seen: Observed{Outcome: strategy.ControllerError, Reason: "controller error: boom"},
			d:    strategy.Decision{Action: strategy.Fail, Status: lifecycle.FailedController, Reason: "controller error: boom"},
			job:  lifecycle.FailedController, tasks: []lifecycle.Status{lifecycle.FailedController, lifecycle.Cancelled},
			failure: "controller error: boom",
			known:   &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t, b)
			id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), InputKey: "key"}, []NewTask{{Name: "t0"}, {Name: "t1"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.tx(ctx, func(tx *dbTx) error {
				return recordFailure(ctx, tx, &KnownFailure{InputKey: "key", JobID: 99, Status: lifecycle.Failed}, time.Now())
			}); err != nil {
				t.Fatal(err)
			}
			task := 0
			if tc.lastTask {
				a, _ := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
				running(t, s, a)
				if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.Succeeded}, strategy.Decision{Action: strategy.NextTask}, Facts{}); err != nil {
					t.Fatal(err)
				}
				task = 1
			}
			a, err := s.NewAttempt(ctx, id, task, clusterName(id, task), nil, lifecycle.Starting)
			if err != nil {
				t.Fatal(err)
			}
			running(t, s, a)
			if err := s.EndAttempt(ctx, a, tc.seen, tc.d, Facts{TaskName: "t0", LogPath: "/logs/1"}); err != nil {
				t.Fatal(err)
			}
			st := stateOf(t, s, id)
			var tasks []lifecycle.Status
			for _, task := range st.Tasks {
				tasks = append(tasks, task.Status)
			}
			j := st.Job
			if j.Status != tc.job || j.CurrentTask != tc.current || j.FailureReason != tc.failure || j.StatusReason != tc.reason {
				t.Errorf("job %s task %d failure %q reason %q; want %s %d %q %q", j.Status, j.CurrentTask, j.FailureReason, j.StatusReason,
					tc.job, tc.current, tc.failure, tc.reason)
			}
			if diff := cmp.Diff(tc.tasks, tasks); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if got := st.Tasks[task].PreemptedIn; got != tc.preempted {
				t.Errorf("preempted_in %q, want %q", got, tc.preempted)
			}
			last := st.Attempts[len(st.Attempts)-1]
			if last.Outcome != string(tc.seen.Outcome) || last.Action != string(tc.d.Action) || last.Decision != tc.d.Reason || last.Reason != tc.seen.Reason {
				t.Errorf("attempt %+v", last)
			}
			var want []*KnownFailure
			if tc.known != nil {
				want = []*KnownFailure{tc.known}
			}
			if diff := cmp.Diff(want, st.Failures, cmpopts.IgnoreFields(KnownFailure{}, "RecordedAt")); diff != "" {
				t.Errorf("known failures (-want +got):\n%s", diff)
			}
		})
	}
}

// A decision that does not say how the job ends is refused.
func TestDecisionsThatEndNothingAreRefused(t *testing.T) {
	onEach(t, testDecisionsThatEndNothingAreRefused)
}

func testDecisionsThatEndNothingAreRefused(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, _ := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`)}, []NewTask{{}})
	a, _ := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	running(t, s, a)
	before := stateOf(t, s, id)
	for _, d := range []strategy.Decision{
		{Action: strategy.Fail},
		{Action: strategy.Fail, Status: lifecycle.Running},
		{Action: strategy.Succeed, Status: lifecycle.Failed},
		{Action: "explode"},
	} {
		if err := s.EndAttempt(ctx, a, Observed{Outcome: strategy.UserFailure}, d, Facts{}); err == nil {
			t.Errorf("EndAttempt took %+v", d)
		}
	}
	if diff := cmp.Diff(before, stateOf(t, s, id)); diff != "" {
		t.Errorf("a refused decision wrote (-before +after):\n%s", diff)
	}
	waiting, _ := s.CreateJob(ctx, &Job{Name: "w", Spec: []byte(`{}`)}, []NewTask{{}})
	before = stateOf(t, s, waiting)
	for _, d := range []strategy.Decision{{Action: strategy.Restart}, {Action: strategy.Fail, Status: lifecycle.Pending}} {
		if err := s.FinishJob(ctx, waiting, d); err == nil || errors.Is(err, ErrOpenAttempt) {
			t.Errorf("FinishJob of %+v: %v", d, err)
		}
	}
	if diff := cmp.Diff(before, stateOf(t, s, waiting)); diff != "" {
		t.Errorf("a refused decision wrote (-before +after):\n%s", diff)
	}
}

// The lifecycle reads the strategy's actions by name (lifecycle.Decision):
// each of them moves a running job.
func TestTheLifecycleKnowsEveryStrategyAction(t *testing.T) {
	for a, status := range map[strategy.Action]lifecycle.Status{
		strategy.Recover: "", strategy.Restart: "", strategy.Escalate: "", strategy.NextTask: "",
		strategy.Succeed: lifecycle.Succeeded, strategy.Fail: lifecycle.Failed, strategy.Cancel: lifecycle.Cancelled,
	} {
		j := lifecycle.Job{ID: 1, Status: lifecycle.Running}
		c, err := lifecycle.AfterDecision(j, []lifecycle.Task{{Idx: 0, Status: lifecycle.Running}}, 0, decision(strategy.Decision{Action: a, Status: status}))
		if err != nil || c.Job == "" {
			t.Errorf("%s: %+v, %v", a, c, err)
		}
	}
}
