package lifecycle

import (
	"errors"
	"fmt"
)

// This file is how a job's status moves: one function per event the
// controller records (a new job, a new attempt, its cluster up, its task
// running, a wait for capacity, a cancel, an attempt ending, the
// strategy's decision on it, the end of a job with no attempt open). Each
// takes what the store read of the job, its tasks and the attempt, in the
// transaction that writes, and returns the Change to write, or an error
// naming the move it refuses; the store writes what they return and
// nothing else. Every move they return is one the tables of moves.go list,
// and a terminal status never changes.

// Job is what a transition reads of a job.
type Job struct {
	ID              int64
	Status          Status
	CancelRequested bool
}

// Task is what a transition reads of one task of a job's pipeline.
type Task struct {
	Idx    int
	Status Status
}

// Attempt is what a transition reads of an attempt.
type Attempt struct {
	Job     int64
	Task    int
	Attempt int // 1-based, per task
	State   AttemptState
}

// Decision is the strategy's decision on an ended attempt
// (strategy.Decision), as far as statuses go.
type Decision struct {
	// Action is the strategy's action, by name (strategy.Action).
	Action string
	// Status is the job's final status for an action that ends it.
	Status Status
	// Reason says why; it is the job's status reason while the job goes
	// on, and its failure reason when it fails.
	Reason string
}

// The strategy's actions (strategy.Action), by the names it gives them.
const (
	actRecover  = "recover"
	actRestart  = "restart"
	actEscalate = "escalate"
	actNextTask = "next_task"
	actSucceed  = "succeed"
	actFail     = "fail"
	actCancel   = "cancel"
	actRequeue  = "requeue"
)

// Change is what one transition writes. An empty field leaves what it
// names as it is.
type Change struct {
	// Job is the job's new status; "" leaves the job's status and status
	// reason unwritten.
	Job Status
	// Task is the new status of the task the event is about.
	Task Status
	// Others is the new status of the job's other tasks that have not
	// ended: those a job that ends never runs.
	Others Status
	// Attempt is the attempt's new state.
	Attempt AttemptState
	// StatusReason is why the job is in its status, while it has not
	// ended; written with Job.
	StatusReason string
	// Failure is the job's failure reason; "" keeps the one it has.
	Failure string
	// NextTask moves the job on to its pipeline's next task.
	NextTask bool
	// Requeue sends the job back to wait for admission: it is no longer
	// admitted, and no longer asked to yield.
	Requeue bool
}

// ErrCancelRequested is wrapped by the error of a move that sends a job
// being cancelled back to work (a new attempt, a wait for capacity).
var ErrCancelRequested = errors.New("job is being cancelled")

// ErrOpenAttempt is wrapped by the error of a move that needs the job to
// have no attempt open, when it has one: a job never has two live attempts.
var ErrOpenAttempt = errors.New("job has an attempt that has not ended")

// ended fails with an error wrapping ErrTerminal when j has ended.
func (j Job) ended() error {
	if j.Status.Terminal() {
		return fmt.Errorf("job %d is %s: %w", j.ID, j.Status, ErrTerminal)
	}
	return nil
}

// NewJob is the status of a job just submitted, and of each of its tasks:
// a task linked to another job's run of it (a retry of a pipeline) is
// SUCCEEDED from the start, every other task PENDING.
func NewJob(linked []bool) (job Status, tasks []Status) {
	tasks = make([]Status, len(linked))
	for i, l := range linked {
		tasks[i] = Pending
		if l {
			tasks[i] = Succeeded
		}
	}
	return Pending, tasks
}

// NewAttempt is a new attempt of task t of job j: the job and the task move
// to `to`, STARTING (a first attempt, or the pipeline's next task) or
// RECOVERING (after a restart or recovery), and the attempt is launching
// on a new cluster, or starting on the cluster of the attempt before
// (reuse). It fails with ErrTerminal when the job has ended, then with
// ErrCancelRequested when it is being cancelled, with ErrOpenAttempt when
// it has an attempt open, and with ErrNotAMove for a move the tables do
// not list.
func NewAttempt(j Job, open bool, t Task, to Status, reuse bool) (Change, error) {
	if to != Starting && to != Recovering {
		return Change{}, fmt.Errorf("job %d: a new attempt makes a job %s or %s, not %s", j.ID, Starting, Recovering, to)
	}
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	if j.CancelRequested {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrCancelRequested)
	}
	if open {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrOpenAttempt)
	}
	if err := CheckJob(j.ID, j.Status, to); err != nil {
		return Change{}, err
	}
	if err := CheckTask(j.ID, t.Idx, t.Status, to); err != nil {
		return Change{}, err
	}
	c := Change{Job: to, Task: to, Attempt: AttemptLaunching}
	if reuse {
		c.Attempt = AttemptStarting
	}
	return c, nil
}

// Launched is attempt a's cluster up: the attempt is starting the task on
// it. The job's and the task's statuses stay.
func Launched(a Attempt) (Change, error) {
	return attemptTo(a, AttemptStarting)
}

// TaskRunning is the task of attempt a running on every node: the attempt and
// the task are running, and the job RUNNING, except that a job being
// cancelled stays as it is (CANCELLING), reason included.
func TaskRunning(j Job, t Task, a Attempt) (Change, error) {
	c, err := attemptTo(a, AttemptRunning)
	if err != nil {
		return c, err
	}
	if err := CheckTask(j.ID, t.Idx, t.Status, Running); err != nil {
		return Change{}, err
	}
	c.Task = Running
	if j.CancelRequested {
		return c, CheckJob(j.ID, j.Status, j.Status)
	}
	if err := CheckJob(j.ID, j.Status, Running); err != nil {
		return Change{}, err
	}
	c.Job = Running
	return c, nil
}

// Waiting is job j waiting for capacity: no placement had any, and the job
// is PENDING until its next round of launch tries. It fails with
// ErrTerminal when the job has ended, ErrCancelRequested when it is being
// cancelled, and ErrNotAMove for a move the tables do not list.
func Waiting(j Job) (Change, error) {
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	if j.CancelRequested {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrCancelRequested)
	}
	if j.Status == Running {
		// RUNNING → PENDING is a preempted job's (Requeued, a requeue
		// decision), never a wait for capacity: a running job has it.
		return Change{}, &MoveError{Subject: fmt.Sprintf("job %d", j.ID), Kind: "job", From: string(j.Status), To: string(Pending)}
	}
	if err := CheckJob(j.ID, j.Status, Pending); err != nil {
		return Change{}, err
	}
	return Change{Job: Pending}, nil
}

// CancelReason is the status reason of a job being cancelled.
const CancelReason = "cancel requested"

// Cancel is a user asking to cancel job j: it is CANCELLING until the
// controller ends it. A job that has ended is not cancelled: Cancel fails
// with ErrTerminal.
func Cancel(j Job) (Change, error) {
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	if err := CheckJob(j.ID, j.Status, Cancelling); err != nil {
		return Change{}, err
	}
	return Change{Job: Cancelling, StatusReason: CancelReason}, nil
}

// Requeued is job j, asked to yield its place to a job of higher
// priority (preemption), going back to wait for admission while it has no
// attempt open (admitted but not started, or backing off): the job and
// its current task t are PENDING, with reason. A job whose attempt is open
// goes back through that attempt's end (AfterDecision with the strategy's
// requeue). It fails with ErrOpenAttempt while an attempt is open, then
// with ErrTerminal when the job has ended, ErrCancelRequested when it is
// being cancelled (the cancel ends it), and ErrNotAMove for a move the
// tables do not list.
func Requeued(j Job, open bool, t Task, reason string) (Change, error) {
	if open {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrOpenAttempt)
	}
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	if j.CancelRequested {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrCancelRequested)
	}
	if err := CheckJob(j.ID, j.Status, Pending); err != nil {
		return Change{}, err
	}
	if err := CheckTask(j.ID, t.Idx, t.Status, Pending); err != nil {
		return Change{}, err
	}
	return Change{Job: Pending, Task: Pending, StatusReason: reason, Requeue: true}, nil
}

// Ending is attempt a ending: its outcome and exit codes are written
// exactly once. It fails with ErrAttemptEnded when a has ended.
func Ending(a Attempt) (Change, error) {
	return attemptTo(a, AttemptEnded)
}

func attemptTo(a Attempt, to AttemptState) (Change, error) {
	if err := CheckAttempt(a.Job, a.Task, a.Attempt, a.State, to); err != nil {
		return Change{}, err
	}
	return Change{Attempt: to}, nil
}

// AfterDecision is the one place a decision on an ended attempt of task
// `ended` becomes statuses: what that task and its job j (whose tasks are
// tasks) move to. Recover, Restart and Escalate make both RECOVERING,
// with the decision's reason; Requeue (preempted by a job of higher
// priority) makes both PENDING, waiting for admission again; NextTask makes the task SUCCEEDED and the
// job STARTING its next task; Succeed, Fail and Cancel end both with the
// decision's status, and the tasks that never ran are CANCELLED. A job
// being cancelled keeps its status (CANCELLING) unless the decision ends
// it: the cancel ends it next. It fails with ErrTerminal when the job has
// ended, and with ErrNotAMove for a move of the job or of a task the
// tables do not list. The attempt's own end is Ending's.
func AfterDecision(j Job, tasks []Task, ended int, d Decision) (Change, error) {
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	c, err := decided(j, d)
	if err != nil {
		return Change{}, err
	}
	if err := CheckJob(j.ID, j.Status, c.Job); err != nil {
		return Change{}, err
	}
	if c.Job.Terminal() {
		c.Others = Cancelled
	}
	for _, t := range tasks {
		switch {
		case t.Idx == ended:
			err = CheckTask(j.ID, t.Idx, t.Status, c.Task)
		case c.Others != "" && t.Status == Pending:
			// The tasks after the one that ended the job never run.
			err = CheckTask(j.ID, t.Idx, t.Status, c.Others)
		}
		if err != nil {
			return Change{}, err
		}
	}
	return c, nil
}

// Finish ends job j, which has no attempt open (cancelled before its next
// attempt, or failed by the controller), as d decides: d must end the job.
// Every task of j that has not ended takes the decision's status. It
// fails with ErrOpenAttempt while an attempt is open, then with
// ErrTerminal when the job has ended, and with ErrNotAMove for a move the
// tables do not list.
func Finish(j Job, open bool, tasks []Task, d Decision) (Change, error) {
	if open {
		return Change{}, fmt.Errorf("job %d: %w", j.ID, ErrOpenAttempt)
	}
	if err := j.ended(); err != nil {
		return Change{}, err
	}
	c, err := decided(j, d)
	if err != nil {
		return Change{}, err
	}
	if !c.Job.Terminal() {
		return Change{}, fmt.Errorf("job %d: FinishJob ends a job; decision %s does not", j.ID, d.Action)
	}
	if err := CheckJob(j.ID, j.Status, c.Job); err != nil {
		return Change{}, err
	}
	for _, t := range tasks {
		if t.Status.Terminal() {
			continue
		}
		if err := CheckTask(j.ID, t.Idx, t.Status, c.Task); err != nil {
			return Change{}, err
		}
	}
	return Change{Job: c.Job, Others: c.Task, Failure: c.Failure}, nil
}

// decided is what d makes of the job and of the task whose attempt ended.
func decided(j Job, d Decision) (Change, error) {
	var c Change
	switch d.Action {
	case actRecover, actRestart, actEscalate:
		c = Change{Task: Recovering, Job: Recovering, StatusReason: d.Reason}
	case actNextTask:
		c = Change{Task: Succeeded, Job: Starting, NextTask: true}
	case actRequeue:
		c = Change{Task: Pending, Job: Pending, StatusReason: d.Reason, Requeue: true}
	case actSucceed, actFail, actCancel:
		if !d.Status.Terminal() || (d.Action == actSucceed) != (d.Status == Succeeded) {
			return c, fmt.Errorf("job %d: decision %s with status %q does not end a job", j.ID, d.Action, d.Status)
		}
		c = Change{Task: d.Status, Job: d.Status}
		if d.Action == actFail {
			c.Failure = d.Reason
		}
	default:
		return c, fmt.Errorf("job %d: unknown decision %q", j.ID, d.Action)
	}
	if j.CancelRequested && !c.Job.Terminal() {
		c.Job, c.StatusReason = j.Status, CancelReason
	}
	return c, nil
}
