package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"sortie/controller/lifecycle"
)

// End is everything that changes when an attempt ends, written in one
// transaction: the attempt's outcome and exit codes (exactly once), the
// decision, the task's counters, the job's status, and the known-failure
// record.
type End struct {
	Attempt   *Attempt
	Outcome   string
	ExitCodes []*int
	Reason    string // why the attempt ended
	Action    string // what was decided
	Decision  string // why, as shown to the user

	RecoveryCount    int // the task's counters after the decision
	RestartsOnErrors int
	TaskStatus       lifecycle.Status
	PreemptedIn      string // JSON placement, set on a preemption; "" keeps the old value
	NextTask         bool   // move the job to its next task

	JobStatus     lifecycle.Status
	StatusReason  string
	FailureReason string
	NextActionAt  *time.Time

	// KnownFailure, when set, records the job's inputs as a known failure.
	KnownFailure *KnownFailure
	// ClearKnownFailure, when set, forgets the known failure of that key.
	ClearKnownFailure string
}

// EndAttempt applies e. It fails with ErrAttemptEnded if the attempt has
// already ended, with ErrTerminal if the job has, and with ErrNotAMove if
// e moves the job or the task in a way the lifecycle does not; then nothing
// is written. A job being cancelled keeps its status (CANCELLING) unless e
// ends it: the cancel ends it next.
func (s *Store) EndAttempt(ctx context.Context, e End) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		a := e.Attempt
		now := s.now()
		at, err := readAttempt(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		if err := at.moveTo(lifecycle.AttemptEnded); err != nil {
			return err
		}
		j, err := readJob(ctx, tx, a.JobID)
		if err != nil {
			return err
		}
		jobStatus, statusReason := e.JobStatus, e.StatusReason
		if j.cancelRequested && !jobStatus.Terminal() {
			jobStatus, statusReason = j.status, "cancel requested"
		}
		if err := lifecycle.CheckJob(a.JobID, j.status, jobStatus); err != nil {
			return err
		}
		tasks, err := readTasks(ctx, tx, a.JobID)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			switch {
			case t.idx == a.TaskIdx:
				err = lifecycle.CheckTask(a.JobID, t.idx, t.status, e.TaskStatus)
			case jobStatus.Terminal() && t.status == lifecycle.Pending:
				// The tasks after the one that ended the job never run.
				err = lifecycle.CheckTask(a.JobID, t.idx, t.status, lifecycle.Cancelled)
			}
			if err != nil {
				return err
			}
		}

		codes, err := json.Marshal(e.ExitCodes)
		if err != nil {
			return err
		}
		if e.ExitCodes == nil {
			codes = []byte("[]")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ?, outcome = ?, exit_codes = ?, reason = ?, action = ?, decision = ?, ended_at = ?
			WHERE id = ?`, lifecycle.AttemptEnded, e.Outcome, string(codes), e.Reason, e.Action, e.Decision, fmtTime(now), a.ID); err != nil {
			return err
		}
		var ended any
		if e.TaskStatus.Terminal() {
			ended = fmtTime(now)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, recovery_count = ?, restarts_on_errors = ?,
			preempted_in = COALESCE(?, preempted_in), launch_round = 0, ended_at = COALESCE(?, ended_at) WHERE job_id = ? AND idx = ?`,
			e.TaskStatus, e.RecoveryCount, e.RestartsOnErrors, nullStr(e.PreemptedIn), ended, a.JobID, a.TaskIdx); err != nil {
			return err
		}
		var jobEnded any
		if jobStatus.Terminal() {
			jobEnded = fmtTime(now)
		}
		advance := 0
		if e.NextTask {
			advance = 1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, failure_reason = COALESCE(?, failure_reason),
			next_action_at = ?, exit_codes = ?, current_task = current_task + ?, ended_at = ?,
			recovery_count = (SELECT COALESCE(SUM(recovery_count), 0) FROM tasks WHERE job_id = ?),
			restarts_on_errors = (SELECT COALESCE(SUM(restarts_on_errors), 0) FROM tasks WHERE job_id = ?)
			WHERE id = ?`,
			jobStatus, statusReason, nullStr(e.FailureReason), fmtTimePtr(e.NextActionAt), string(codes), advance, jobEnded,
			a.JobID, a.JobID, a.JobID); err != nil {
			return err
		}
		if jobStatus.Terminal() {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ? WHERE job_id = ? AND status = ?`, lifecycle.Cancelled, a.JobID, lifecycle.Pending); err != nil {
				return err
			}
		}
		if e.KnownFailure != nil {
			if err := recordFailure(ctx, tx, e.KnownFailure, now); err != nil {
				return err
			}
		}
		if e.ClearKnownFailure != "" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM known_failures WHERE input_key = ?`, e.ClearKnownFailure); err != nil {
				return err
			}
		}
		return nil
	})
}

// FinishJob ends a job that has no open attempt (cancelled before launch,
// failed prechecks) with a terminal status; the remaining tasks take status
// taskStatus. It fails with ErrOpenAttempt while an attempt is open, with
// ErrTerminal if the job has ended, and with ErrNotAMove for a move the
// lifecycle does not list; then nothing is written.
func (s *Store) FinishJob(ctx context.Context, jobID int64, status lifecycle.Status, failureReason string, taskStatus lifecycle.Status) error {
	if !status.Terminal() || !taskStatus.Terminal() {
		return fmt.Errorf("job %d: FinishJob ends a job, not with %s (tasks %s)", jobID, status, taskStatus)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := noOpenAttempt(ctx, tx, jobID); err != nil {
			return err
		}
		j, err := readJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		if err := lifecycle.CheckJob(jobID, j.status, status); err != nil {
			return err
		}
		tasks, err := readTasks(ctx, tx, jobID)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if t.status.Terminal() {
				continue
			}
			if err := lifecycle.CheckTask(jobID, t.idx, t.status, taskStatus); err != nil {
				return err
			}
		}
		now := fmtTime(s.now())
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = '', failure_reason = ?, next_action_at = NULL, ended_at = ?
			WHERE id = ?`, status, nullStr(failureReason), now, jobID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tasks SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE job_id = ? AND status NOT IN `+terminalSQL,
			taskStatus, now, jobID)
		return err
	})
}

// LaunchTry is one launch of an attempt at a placement that failed.
type LaunchTry struct {
	JobID   int64
	TaskIdx int
	Attempt int
	Round   int
	Cloud   string
	Region  string
	Zone    string
	Class   string
	Message string
	At      time.Time
}

// RecordLaunchTry stores a failed launch try.
func (s *Store) RecordLaunchTry(ctx context.Context, t LaunchTry) error {
	return s.exec(ctx, `INSERT INTO launch_tries (job_id, task_idx, attempt, round, cloud, region, zone, class, message, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.JobID, t.TaskIdx, t.Attempt, t.Round, t.Cloud, t.Region, t.Zone, t.Class, t.Message, fmtTime(s.now()))
}

// LaunchTries returns a job's failed launch tries in order.
func (s *Store) LaunchTries(ctx context.Context, jobID int64) ([]LaunchTry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT job_id, task_idx, attempt, round, cloud, region, zone, class, message, at
		FROM launch_tries WHERE job_id = ? ORDER BY id`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LaunchTry
	for rows.Next() {
		var t LaunchTry
		var at string
		if err := rows.Scan(&t.JobID, &t.TaskIdx, &t.Attempt, &t.Round, &t.Cloud, &t.Region, &t.Zone, &t.Class, &t.Message, &at); err != nil {
			return nil, err
		}
		if p := parseTime(sql.NullString{String: at, Valid: true}); p != nil {
			t.At = *p
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
