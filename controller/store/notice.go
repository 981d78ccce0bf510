package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

// ErrReplaced is returned when a replacement is asked for an attempt that
// has one already.
var ErrReplaced = errors.New("attempt is replaced already")

// RecordNotice stores the preemption notice heard on an attempt's node. The
// first notice is kept, except that a notice that ends the node replaces a
// rebalance recommendation (which ends nothing). It says whether it wrote.
func (s *Store) RecordNotice(ctx context.Context, a *Attempt, n Notice) (bool, error) {
	res, err := s.execResult(ctx, `UPDATE attempts SET notice_kind = ?, notice_source = ?, notice_at = ?, notice_deadline = ?
		WHERE id = ? AND `+openSQL+` AND (notice_kind IS NULL OR (notice_kind = ? AND ? <> ?))`,
		n.Kind, n.Source, fmtTime(n.At), fmtTimePtr(n.Deadline), a.ID, NoticeRebalance, n.Kind, NoticeRebalance)
	if err != nil {
		return false, fmt.Errorf("record the notice of attempt %d: %w", a.ID, err)
	}
	k, err := res.RowsAffected()
	return k > 0, err
}

// NoticeRebalance is the kind of an AWS rebalance recommendation: it ends
// nothing, and a later notice that ends the node is recorded over it.
const NoticeRebalance = "rebalance"

// ReplaceAttempt asks for the replacement of attempt a, whose node is under
// a preemption notice, before a ends: in one transaction it records the
// decision d (a recovery) on a, with the time (replaced_at), and moves the
// task and the job to RECOVERING with d's counters, as EndAttempt would.
// The attempt stays open until EndReplaced; the job's next attempt may be
// made meanwhile. It fails with ErrReplaced when a was replaced already,
// ErrAttemptEnded when it has ended, ErrTerminal when the job has, and
// ErrNotAMove for a move the lifecycle does not list.
func (s *Store) ReplaceAttempt(ctx context.Context, a *Attempt, d strategy.Decision, f Facts) error {
	if d.Action != strategy.Recover {
		return fmt.Errorf("attempt %d: a replacement is a recovery, not %s", a.ID, d.Action)
	}
	return s.tx(ctx, func(tx *dbTx) error {
		at, err := s.ending(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		var replaced sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT replaced_at FROM attempts WHERE id = ?`, a.ID).Scan(&replaced); err != nil {
			return err
		}
		if replaced.Valid {
			return fmt.Errorf("attempt %d: %w", a.ID, ErrReplaced)
		}
		j, n, err := decide(ctx, tx, at, d)
		if err != nil {
			return err
		}
		now := fmtTime(s.now())
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET action = ?, decision = ?, replaced_at = ? WHERE id = ?`,
			d.Action, d.Reason, now, a.ID); err != nil {
			return err
		}
		b, _ := json.Marshal(schema.Placement{Cloud: at.cloud, Region: at.region, Zone: at.zone})
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, recovery_count = ?, restarts_on_errors = ?,
			preempted_in = ?, launch_round = 0 WHERE job_id = ? AND idx = ?`,
			n.Task, d.Counters.RecoveryCount, d.Counters.RestartsOnErrors, string(b), j.ID, at.Task); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, next_action_at = ?,
			recovery_count = (SELECT COALESCE(SUM(recovery_count), 0) FROM tasks WHERE job_id = ?),
			restarts_on_errors = (SELECT COALESCE(SUM(restarts_on_errors), 0) FROM tasks WHERE job_id = ?)
			WHERE id = ?`, n.Job, n.StatusReason, fmtTimePtr(f.NextActionAt), j.ID, j.ID, j.ID)
		return err
	})
}

// EndReplaced ends a replaced attempt once its node is gone, its task has
// stopped, or the notice's deadline has passed: its outcome, exit codes
// (exactly once) and reason. The decision was recorded by ReplaceAttempt,
// so nothing of the task or the job changes, whatever they are now. It
// fails with ErrAttemptEnded when a has ended, and when a was never
// replaced (EndAttempt ends those).
func (s *Store) EndReplaced(ctx context.Context, a *Attempt, o Observed) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if _, err := s.ending(ctx, tx, a.ID); err != nil {
			return err
		}
		codes := []byte("[]")
		if o.ExitCodes != nil {
			var err error
			if codes, err = json.Marshal(o.ExitCodes); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ?, outcome = ?, exit_codes = ?, reason = ?, ended_at = ?
			WHERE id = ? AND replaced_at IS NOT NULL`, lifecycle.AttemptEnded, o.Outcome, string(codes), o.Reason, fmtTime(s.now()), a.ID)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("attempt %d was not replaced; EndAttempt ends it: %w", a.ID, ErrAttemptEnded)
		}
		// The job's running attempt is another one now: its billing stays.
		return addCost(ctx, tx, a.JobID, a.ID, o.Cost, len(a.InstanceIDs) > 0, false)
	})
}

// ReplacedAttempts returns every replaced attempt that has not ended.
func (s *Store) ReplacedAttempts(ctx context.Context) ([]*Attempt, error) {
	return findAttempts(ctx, s.db, `WHERE `+openSQL+` AND replaced_at IS NOT NULL ORDER BY id`)
}

// ReplacedAttemptsOf returns job's replaced attempts that have not ended.
func (s *Store) ReplacedAttemptsOf(ctx context.Context, jobID int64) ([]*Attempt, error) {
	return findAttempts(ctx, s.db, `WHERE job_id = ? AND `+openSQL+` AND replaced_at IS NOT NULL ORDER BY id`, jobID)
}
