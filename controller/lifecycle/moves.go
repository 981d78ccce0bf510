package lifecycle

import (
	"errors"
	"fmt"
)

// This file owns every status change of a job and of an attempt: the store
// checks each change it writes against these tables, in the transaction
// that writes it, and refuses any other.

// jobMoves is every move of a job's status, from → to. A task of a job's
// pipeline moves by the same table. Staying in a non-terminal status is
// not a move and is always allowed; a terminal status has no moves.
//
// Why each move exists:
//   - PENDING → STARTING, RECOVERING: a new attempt; → RUNNING: the launch
//     that waited for capacity succeeded and the task started.
//   - STARTING, RECOVERING → PENDING: no placement had capacity; the job
//     waits for the next round of launch tries. Also, with RUNNING →
//     PENDING: the job gave its place under a limit to a waiting job of
//     higher priority (limits.preemption) and waits for admission again.
//   - PENDING, STARTING, RECOVERING → RUNNING: the task runs on every node.
//   - PENDING, STARTING → RECOVERING: the new cluster was lost before the
//     task started; RUNNING → RECOVERING: restart or recovery.
//   - RUNNING → STARTING: the task succeeded; the pipeline's next one starts.
//   - every non-terminal status → CANCELLING (the user asked) and →
//     CANCELLED: the cancel ends a job wherever it is.
//   - PENDING, STARTING, RECOVERING → FAILED_PRECHECKS, FAILED_NO_RESOURCE:
//     the launch of an attempt failed.
//   - RUNNING → SUCCEEDED, FAILED, FAILED_SETUP: the attempt ended so.
//   - CANCELLING → any terminal status: a job being cancelled ends however
//     its attempt ended first, or CANCELLED; it never goes back to work.
//   - every non-terminal status → FAILED_CONTROLLER: sortie cannot go on.
//   - PENDING, STARTING, RECOVERING → FAILED: the job's max_duration ran
//     out while it waited for capacity, launched, or backed off.
var jobMoves = map[Status][]Status{
	Pending: {Starting, Running, Recovering, Cancelling,
		Cancelled, Failed, FailedPrechecks, FailedNoResource, FailedController},
	Starting: {Pending, Running, Recovering, Cancelling,
		Cancelled, Failed, FailedPrechecks, FailedNoResource, FailedController},
	Recovering: {Pending, Running, Cancelling,
		Cancelled, Failed, FailedPrechecks, FailedNoResource, FailedController},
	Running: {Pending, Starting, Recovering, Cancelling,
		Succeeded, Cancelled, Failed, FailedSetup, FailedController},
	Cancelling: {Succeeded, Cancelled, Failed, FailedSetup, FailedPrechecks, FailedNoResource, FailedController},
}

// attemptMoves is every move of an attempt's state. An attempt is created
// launching (a new cluster) or starting (the cluster of the attempt before,
// for a restart); ended is final.
var attemptMoves = map[AttemptState][]AttemptState{
	AttemptLaunching: {AttemptStarting, AttemptEnded},
	AttemptStarting:  {AttemptRunning, AttemptEnded},
	AttemptRunning:   {AttemptEnded},
}

// Move is one move of a job's (or task's) status.
type Move struct{ From, To Status }

func (m Move) String() string { return string(m.From) + " → " + string(m.To) }

// AttemptMove is one move of an attempt's state.
type AttemptMove struct{ From, To AttemptState }

func (m AttemptMove) String() string { return string(m.From) + " → " + string(m.To) }

// JobMoves lists every move of the job table, by status in Statuses order.
func JobMoves() []Move {
	var out []Move
	for _, from := range Statuses() {
		for _, to := range jobMoves[from] {
			out = append(out, Move{from, to})
		}
	}
	return out
}

// AttemptMoves lists every move of the attempt table.
func AttemptMoves() []AttemptMove {
	var out []AttemptMove
	for _, from := range AttemptStates() {
		for _, to := range attemptMoves[from] {
			out = append(out, AttemptMove{from, to})
		}
	}
	return out
}

// ErrTerminal is wrapped by the error for any change of a terminal status.
var ErrTerminal = errors.New("a terminal status never changes")

// ErrAttemptEnded is wrapped by the error for any change of an ended
// attempt: its outcome and exit codes are written exactly once.
var ErrAttemptEnded = errors.New("attempt has already ended")

// ErrNotAMove is wrapped by a MoveError: the tables do not list the move.
var ErrNotAMove = errors.New("not a move the lifecycle allows")

// MoveError is a move the tables do not list.
type MoveError struct {
	Subject  string // "job 12", "job 12 task 0", "job 12 task 0 attempt 2"
	Kind     string // "job", "task" or "attempt"
	From, To string
}

func (e *MoveError) Error() string {
	article := "a"
	if e.Kind == "attempt" {
		article = "an"
	}
	return fmt.Sprintf("%s: %s → %s is not a move %s %s makes", e.Subject, e.From, e.To, article, e.Kind)
}

func (e *MoveError) Unwrap() error { return ErrNotAMove }

// CheckJob checks a move of job id's status. It fails with an error
// wrapping ErrTerminal when the job has ended, and with a *MoveError when
// the table does not list the move.
func CheckJob(id int64, from, to Status) error {
	return check(fmt.Sprintf("job %d", id), "job", from, to)
}

// CheckTask checks a move of a task's status, by the job table.
func CheckTask(job int64, task int, from, to Status) error {
	return check(fmt.Sprintf("job %d task %d", job, task), "task", from, to)
}

func check(subject, kind string, from, to Status) error {
	if from.Terminal() {
		return fmt.Errorf("%s is %s: %w", subject, from, ErrTerminal)
	}
	if from == to && from.Valid() {
		return nil
	}
	for _, t := range jobMoves[from] {
		if t == to {
			return nil
		}
	}
	return &MoveError{Subject: subject, Kind: kind, From: string(from), To: string(to)}
}

// CheckAttempt checks a move of an attempt's state. It fails with an
// error wrapping ErrAttemptEnded when the attempt has ended, and with a
// *MoveError when the table does not list the move.
func CheckAttempt(job int64, task, attempt int, from, to AttemptState) error {
	subject := fmt.Sprintf("job %d task %d attempt %d", job, task, attempt)
	if from == AttemptEnded {
		return fmt.Errorf("%s: %w", subject, ErrAttemptEnded)
	}
	if _, known := attemptMoves[from]; known && from == to {
		return nil
	}
	for _, t := range attemptMoves[from] {
		if t == to {
			return nil
		}
	}
	return &MoveError{Subject: subject, Kind: "attempt", From: string(from), To: string(to)}
}
