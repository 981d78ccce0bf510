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
// already ended, and with ErrTerminal if the job has.
func (s *Store) EndAttempt(ctx context.Context, e End) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		a := e.Attempt
		now := s.now()
		codes, err := json.Marshal(e.ExitCodes)
		if err != nil {
			return err
		}
		if e.ExitCodes == nil {
			codes = []byte("[]")
		}
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ?, outcome = ?, exit_codes = ?, reason = ?, action = ?, decision = ?, ended_at = ?
			WHERE id = ? AND `+openSQL, lifecycle.AttemptEnded, e.Outcome, string(codes), e.Reason, e.Action, e.Decision, fmtTime(now), a.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("attempt %d of job %d: %w", a.Attempt, a.JobID, ErrAttemptEnded)
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
		if err := setJobAfterAttempt(ctx, tx, a.JobID, string(codes), e, now); err != nil {
			return err
		}
		if e.JobStatus.Terminal() {
			// The tasks after the one that ended the job never run.
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

func setJobAfterAttempt(ctx context.Context, tx *sql.Tx, jobID int64, codes string, e End, now time.Time) error {
	var ended any
	if e.JobStatus.Terminal() {
		ended = fmtTime(now)
	}
	advance := 0
	if e.NextTask {
		advance = 1
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, failure_reason = COALESCE(?, failure_reason),
		next_action_at = ?, exit_codes = ?, current_task = current_task + ?, ended_at = ?,
		recovery_count = (SELECT COALESCE(SUM(recovery_count), 0) FROM tasks WHERE job_id = ?),
		restarts_on_errors = (SELECT COALESCE(SUM(restarts_on_errors), 0) FROM tasks WHERE job_id = ?)
		WHERE id = ? AND status NOT IN `+terminalSQL,
		e.JobStatus, e.StatusReason, nullStr(e.FailureReason), fmtTimePtr(e.NextActionAt), codes, advance, ended, jobID, jobID, jobID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("job %d: %w", jobID, ErrTerminal)
	}
	return nil
}

// FinishJob ends a job that has no open attempt (cancelled before launch,
// failed prechecks) with a terminal status; the remaining tasks take status
// taskStatus.
func (s *Store) FinishJob(ctx context.Context, jobID int64, status lifecycle.Status, failureReason string, taskStatus lifecycle.Status) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := noOpenAttempt(ctx, tx, jobID); err != nil {
			return err
		}
		now := fmtTime(s.now())
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = '', failure_reason = ?, next_action_at = NULL, ended_at = ?
			WHERE id = ? AND status NOT IN `+terminalSQL, status, nullStr(failureReason), now, jobID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("job %d: %w", jobID, ErrTerminal)
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
