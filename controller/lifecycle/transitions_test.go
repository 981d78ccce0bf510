package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func job(st Status) Job        { return Job{ID: 7, Status: st} }
func cancelling(st Status) Job { return Job{ID: 7, Status: st, CancelRequested: true} }
func task(st Status) Task      { return Task{Idx: 0, Status: st} }
func attempt(st AttemptState) Attempt {
	return Attempt{Job: 7, Task: 0, Attempt: 1, State: st}
}

// TestTransitions is each event's transition from the states it meets:
// what it writes, or the error that refuses it.
func TestTransitions(t *testing.T) {
	recoverD := Decision{Action: actRecover, Reason: "spot preemption"}
	failD := Decision{Action: actFail, Status: Failed, Reason: "restart 2/2 on errors"}
	cases := []struct {
		name string
		got  func() (Change, error)
		want Change
		err  error // nil, or what the error wraps
	}{
		// A new attempt.
		{"first attempt", func() (Change, error) { return NewAttempt(job(Pending), false, task(Pending), Starting, false) },
			Change{Job: Starting, Task: Starting, Attempt: AttemptLaunching}, nil},
		{"restart on the same cluster", func() (Change, error) {
			return NewAttempt(job(Recovering), false, task(Recovering), Recovering, true)
		}, Change{Job: Recovering, Task: Recovering, Attempt: AttemptStarting}, nil},
		{"next task of a pipeline", func() (Change, error) { return NewAttempt(job(Starting), false, task(Pending), Starting, false) },
			Change{Job: Starting, Task: Starting, Attempt: AttemptLaunching}, nil},
		{"new attempt of an ended job", func() (Change, error) { return NewAttempt(job(Failed), false, task(Failed), Starting, false) },
			Change{}, ErrTerminal},
		{"new attempt of a job being cancelled", func() (Change, error) {
			return NewAttempt(cancelling(Cancelling), false, task(Recovering), Recovering, false)
		}, Change{}, ErrCancelRequested},
		{"second live attempt", func() (Change, error) { return NewAttempt(job(Running), true, task(Running), Recovering, false) },
			Change{}, ErrOpenAttempt},
		{"new attempt RECOVERING → STARTING", func() (Change, error) {
			return NewAttempt(job(Recovering), false, task(Recovering), Starting, false)
		}, Change{}, ErrNotAMove},
		{"new attempt of a task that ended", func() (Change, error) {
			return NewAttempt(job(Starting), false, task(Succeeded), Starting, false)
		}, Change{}, ErrTerminal},

		// The cluster is up; the task runs.
		{"launched", func() (Change, error) { return Launched(attempt(AttemptLaunching)) }, Change{Attempt: AttemptStarting}, nil},
		{"launched twice", func() (Change, error) { return Launched(attempt(AttemptRunning)) }, Change{}, ErrNotAMove},
		{"launched after its end", func() (Change, error) { return Launched(attempt(AttemptEnded)) }, Change{}, ErrAttemptEnded},
		{"running", func() (Change, error) { return TaskRunning(job(Starting), task(Starting), attempt(AttemptStarting)) },
			Change{Job: Running, Task: Running, Attempt: AttemptRunning}, nil},
		{"running after a recovery", func() (Change, error) {
			return TaskRunning(job(Recovering), task(Recovering), attempt(AttemptStarting))
		}, Change{Job: Running, Task: Running, Attempt: AttemptRunning}, nil},
		{"running while cancelling keeps the job", func() (Change, error) {
			return TaskRunning(cancelling(Cancelling), task(Starting), attempt(AttemptStarting))
		}, Change{Task: Running, Attempt: AttemptRunning}, nil},
		{"running before the cluster is up", func() (Change, error) {
			return TaskRunning(job(Starting), task(Starting), attempt(AttemptLaunching))
		}, Change{}, ErrNotAMove},
		{"running of an ended job", func() (Change, error) {
			return TaskRunning(job(Cancelled), task(Starting), attempt(AttemptStarting))
		}, Change{}, ErrTerminal},

		// No capacity: the job waits.
		{"waiting after a launch", func() (Change, error) { return Waiting(job(Starting)) }, Change{Job: Pending}, nil},
		{"waiting again", func() (Change, error) { return Waiting(job(Pending)) }, Change{Job: Pending}, nil},
		{"waiting while running", func() (Change, error) { return Waiting(job(Running)) }, Change{}, ErrNotAMove},
		{"waiting while cancelling", func() (Change, error) { return Waiting(cancelling(Cancelling)) }, Change{}, ErrCancelRequested},
		{"waiting after the end", func() (Change, error) { return Waiting(job(FailedNoResource)) }, Change{}, ErrTerminal},

		// A cancel.
		{"cancel a running job", func() (Change, error) { return Cancel(job(Running)) },
			Change{Job: Cancelling, StatusReason: CancelReason}, nil},
		{"cancel twice", func() (Change, error) { return Cancel(cancelling(Cancelling)) },
			Change{Job: Cancelling, StatusReason: CancelReason}, nil},
		{"cancel an ended job", func() (Change, error) { return Cancel(job(Succeeded)) }, Change{}, ErrTerminal},

		// An attempt ends.
		{"ending", func() (Change, error) { return Ending(attempt(AttemptRunning)) }, Change{Attempt: AttemptEnded}, nil},
		{"ending a launch", func() (Change, error) { return Ending(attempt(AttemptLaunching)) }, Change{Attempt: AttemptEnded}, nil},
		{"ending twice", func() (Change, error) { return Ending(attempt(AttemptEnded)) }, Change{}, ErrAttemptEnded},

		// The strategy's decision on it.
		{"requeue after a preemption by priority", func() (Change, error) {
			return AfterDecision(job(Running), []Task{task(Running), {1, Pending}}, 0, Decision{Action: actRequeue, Reason: "preempted by priority"})
		}, Change{Job: Pending, Task: Pending, StatusReason: "preempted by priority", Requeue: true}, nil},
		{"requeue of a job being cancelled keeps it CANCELLING", func() (Change, error) {
			return AfterDecision(Job{ID: 7, Status: Cancelling, CancelRequested: true}, []Task{task(Running)}, 0, Decision{Action: actRequeue, Reason: "preempted by priority"})
		}, Change{Job: Cancelling, Task: Pending, StatusReason: CancelReason, Requeue: true}, nil},
		{"requeued between attempts", func() (Change, error) { return Requeued(job(Recovering), false, task(Recovering), "preempted") },
			Change{Job: Pending, Task: Pending, StatusReason: "preempted", Requeue: true}, nil},
		{"requeued once admitted, before its first attempt", func() (Change, error) { return Requeued(job(Pending), false, task(Pending), "preempted") },
			Change{Job: Pending, Task: Pending, StatusReason: "preempted", Requeue: true}, nil},
		{"requeued with an attempt open", func() (Change, error) { return Requeued(job(Running), true, task(Running), "preempted") },
			Change{}, ErrOpenAttempt},
		{"requeued while being cancelled", func() (Change, error) {
			return Requeued(Job{ID: 7, Status: Cancelling, CancelRequested: true}, false, task(Pending), "preempted")
		}, Change{}, ErrCancelRequested},
		{"requeued after it ended", func() (Change, error) { return Requeued(job(Succeeded), false, task(Succeeded), "preempted") },
			Change{}, ErrTerminal},
		{"recover", func() (Change, error) { return AfterDecision(job(Running), []Task{task(Running)}, 0, recoverD) },
			Change{Job: Recovering, Task: Recovering, StatusReason: "spot preemption"}, nil},
		{"recover while cancelling keeps the job", func() (Change, error) {
			return AfterDecision(cancelling(Cancelling), []Task{task(Running)}, 0, recoverD)
		}, Change{Job: Cancelling, Task: Recovering, StatusReason: CancelReason}, nil},
		{"next task", func() (Change, error) {
			return AfterDecision(job(Running), []Task{task(Running), {1, Pending}}, 0, Decision{Action: actNextTask})
		}, Change{Job: Starting, Task: Succeeded, NextTask: true}, nil},
		{"fail cancels the tasks that never ran", func() (Change, error) {
			return AfterDecision(job(Running), []Task{task(Running), {1, Pending}}, 0, failD)
		}, Change{Job: Failed, Task: Failed, Others: Cancelled, Failure: "restart 2/2 on errors"}, nil},
		{"succeed", func() (Change, error) {
			return AfterDecision(job(Running), []Task{task(Running)}, 0, Decision{Action: actSucceed, Status: Succeeded, Reason: "done"})
		}, Change{Job: Succeeded, Task: Succeeded, Others: Cancelled}, nil},
		{"a cancelled job ends however its attempt ended", func() (Change, error) {
			return AfterDecision(cancelling(Cancelling), []Task{task(Running)}, 0, failD)
		}, Change{Job: Failed, Task: Failed, Others: Cancelled, Failure: "restart 2/2 on errors"}, nil},
		{"decision on an ended job", func() (Change, error) { return AfterDecision(job(Succeeded), []Task{task(Succeeded)}, 0, recoverD) },
			Change{}, ErrTerminal},
		{"FAILED_SETUP before the task ran", func() (Change, error) {
			return AfterDecision(job(Starting), []Task{task(Starting)}, 0, Decision{Action: actFail, Status: FailedSetup})
		}, Change{}, ErrNotAMove},
		{"decision on a task that ended", func() (Change, error) {
			return AfterDecision(job(Running), []Task{task(Succeeded), {1, Running}}, 0, recoverD)
		}, Change{}, ErrTerminal},

		// A job with no attempt open ends.
		{"finish a waiting job", func() (Change, error) {
			return Finish(cancelling(Cancelling), false, []Task{task(Succeeded), {1, Recovering}, {2, Pending}},
				Decision{Action: actCancel, Status: Cancelled})
		}, Change{Job: Cancelled, Others: Cancelled}, nil},
		{"finish by the controller", func() (Change, error) {
			return Finish(job(Pending), false, []Task{task(Pending)}, Decision{Action: actFail, Status: FailedController, Reason: "bug"})
		}, Change{Job: FailedController, Others: FailedController, Failure: "bug"}, nil},
		{"finish with an attempt open", func() (Change, error) {
			return Finish(job(Running), true, []Task{task(Running)}, Decision{Action: actCancel, Status: Cancelled})
		}, Change{}, ErrOpenAttempt},
		{"finish an ended job", func() (Change, error) {
			return Finish(job(Cancelled), false, []Task{task(Cancelled)}, Decision{Action: actCancel, Status: Cancelled})
		}, Change{}, ErrTerminal},
		{"finish PENDING as FAILED_SETUP", func() (Change, error) {
			return Finish(job(Pending), false, []Task{task(Pending)}, Decision{Action: actFail, Status: FailedSetup})
		}, Change{}, ErrNotAMove},
	}
	for _, c := range cases {
		got, err := c.got()
		switch {
		case c.err == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: error %v, want one wrapping %v", c.name, err, c.err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// A decision that does not say how it moves the job is refused, whatever
// the job's status: an unknown action, an end with no terminal status, a
// success that is not SUCCEEDED, and, for Finish, one that ends nothing.
func TestDecisionsThatSayNothingAreRefused(t *testing.T) {
	for _, d := range []Decision{
		{Action: "explode"},
		{Action: actFail},
		{Action: actFail, Status: Running},
		{Action: actSucceed, Status: Failed},
		{Action: actCancel, Status: Succeeded + "?"},
	} {
		for _, st := range ActiveStatuses() {
			if c, err := AfterDecision(job(st), []Task{task(Running)}, 0, d); err == nil {
				t.Errorf("AfterDecision from %s took %+v: %+v", st, d, c)
			}
			if c, err := Finish(job(st), false, []Task{task(Pending)}, d); err == nil {
				t.Errorf("Finish from %s took %+v: %+v", st, d, c)
			}
		}
	}
	for _, a := range []string{actRecover, actRestart, actEscalate, actNextTask} {
		if c, err := Finish(job(Pending), false, []Task{task(Pending)}, Decision{Action: a}); err == nil {
			t.Errorf("Finish took %s, which ends nothing: %+v", a, c)
		}
	}
}

// TestTransitionsStayInTheTables runs every transition from every status
// of the job and of its task: from a terminal status each is refused with
// ErrTerminal (TaskRunning may refuse the attempt's or the task's move
// first), and every Change any of them returns is a move the tables
// list. The tables are the gate; the transitions only choose among their
// moves.
func TestTransitionsStayInTheTables(t *testing.T) {
	decisions := []Decision{
		{Action: actRecover}, {Action: actRestart}, {Action: actEscalate}, {Action: actNextTask},
		{Action: actSucceed, Status: Succeeded},
		{Action: actCancel, Status: Cancelled},
	}
	for _, st := range TerminalStatuses() {
		if st != Succeeded && st != Cancelled {
			decisions = append(decisions, Decision{Action: actFail, Status: st})
		}
	}
	type run struct {
		name string
		c    Change
		err  error
	}
	allowed := 0
	for _, js := range Statuses() {
		for _, ts := range Statuses() {
			for _, cancel := range []bool{false, true} {
				j := Job{ID: 7, Status: js, CancelRequested: cancel}
				tk := task(ts)
				var runs []run
				add := func(name string, c Change, err error) { runs = append(runs, run{name, c, err}) }
				for _, to := range []Status{Starting, Recovering} {
					for _, reuse := range []bool{false, true} {
						c, err := NewAttempt(j, false, tk, to, reuse)
						add("NewAttempt "+string(to), c, err)
					}
				}
				for _, as := range []AttemptState{AttemptLaunching, AttemptStarting} {
					c, err := TaskRunning(j, tk, attempt(as))
					add("TaskRunning from "+string(as), c, err)
				}
				c, err := Waiting(j)
				add("Waiting", c, err)
				c, err = Cancel(j)
				add("Cancel", c, err)
				for _, d := range decisions {
					c, err := AfterDecision(j, []Task{tk, {1, Pending}}, 0, d)
					add("AfterDecision "+d.Action+" "+string(d.Status), c, err)
					c, err = Finish(j, false, []Task{tk, {1, Pending}}, d)
					add("Finish "+d.Action+" "+string(d.Status), c, err)
				}
				for _, r := range runs {
					if js.Terminal() {
						// TaskRunning checks the attempt's move and the
						// task's first: it may refuse for those.
						if r.err == nil || !strings.HasPrefix(r.name, "TaskRunning") && !errors.Is(r.err, ErrTerminal) {
							t.Errorf("job %s: %s: %v, want ErrTerminal", js, r.name, r.err)
						}
						continue
					}
					if r.err != nil {
						continue
					}
					allowed++
					if r.c.Job != "" {
						if err := CheckJob(j.ID, js, r.c.Job); err != nil {
							t.Errorf("job %s: %s returned %v", js, r.name, err)
						}
					}
					if r.c.Task != "" {
						if err := CheckTask(j.ID, 0, ts, r.c.Task); err != nil {
							t.Errorf("job %s task %s: %s returned %v", js, ts, r.name, err)
						}
					}
					if r.c.Others != "" {
						if err := CheckTask(j.ID, 1, Pending, r.c.Others); err != nil {
							t.Errorf("job %s: %s returned %v for the other tasks", js, r.name, err)
						}
					}
					if (r.c.Job == "" || !r.c.Job.Terminal()) && r.c.Others != "" {
						t.Errorf("job %s: %s ends the other tasks of a job that goes on: %+v", js, r.name, r.c)
					}
				}
			}
		}
	}
	if allowed == 0 {
		t.Fatal("no transition was allowed from any status")
	}
}
