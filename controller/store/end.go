package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

// Observed is what the controller saw of an attempt that ended.
type Observed struct {
	Outcome strategy.Outcome
	// ExitCodes has one entry per node in rank order; nil where unknown.
	ExitCodes []*int
	// Reason says why the attempt ended.
	Reason string
	// Cost is what the attempt cost, from its billing to its end; nil when
	// no price of it is known.
	Cost *Cost
}

// Facts are what only the controller knows about an ending, besides what
// it observed and what the strategy decided.
type Facts struct {
	// NextActionAt is when a restart or recovery may begin: its back-off.
	// Nil means at once; other decisions ignore it.
	NextActionAt *time.Time
	// TaskName and LogPath describe the attempt in the known-failure record
	// of a job that ends FAILED or FAILED_SETUP.
	TaskName string
	LogPath  string
	// KeptUntil, for a decision that ends the job, keeps the attempt's
	// cluster until then (strategy.KeepOnFailure): written with the end,
	// so the cluster is never torn down early nor left behind.
	KeptUntil *time.Time
	// ConfirmFrom, when a decision runs a failure again to confirm it
	// (strategy.Confirm), is that failure; Verdict, when the confirming
	// run ended, is what it found. A flaky verdict keeps the inputs from
	// being recorded as a known failure, and forgets one recorded before.
	ConfirmFrom *strategy.Evidence
	Verdict     *strategy.Verdict
}

// ending begins each transaction that ends an attempt (EndAttempt,
// ReplaceAttempt, EndReplaced): it locks attempt id's job, reads the
// attempt, and fails with ErrAttemptEnded when it has ended.
func (s *Store) ending(ctx context.Context, tx *dbTx, id int64) (attemptNow, error) {
	if err := s.d.lockAttemptJob(ctx, tx, id); err != nil {
		return attemptNow{}, err
	}
	at, err := readAttempt(ctx, tx, id)
	if err != nil {
		return at, err
	}
	_, err = lifecycle.Ending(at.Attempt)
	return at, err
}

// decide reads the job of at, an attempt ending with decision d (EndAttempt,
// ReplaceAttempt), and its tasks, and returns the job with what d moves
// the task and the job to (lifecycle.AfterDecision).
func decide(ctx context.Context, tx *dbTx, at attemptNow, d strategy.Decision) (jobNow, lifecycle.Change, error) {
	j, err := readJob(ctx, tx, at.Job)
	if err != nil {
		return j, lifecycle.Change{}, err
	}
	tasks, err := readTasks(ctx, tx, j.ID)
	if err != nil {
		return j, lifecycle.Change{}, err
	}
	n, err := lifecycle.AfterDecision(j.Job, tasks, at.Task, decision(d))
	return j, n, err
}

// EndAttempt records how attempt a ended (o) and what follows (d, from
// strategy.Decide), in one transaction: the attempt's outcome and exit
// codes (exactly once) and the decision; the task's counters and status;
// the job's status, exit codes and summed counters; on a recovery, where
// the attempt ran (the strategy avoids it next); when the job ends, its
// remaining tasks CANCELLED, and its inputs recorded as a known failure
// (FAILED, FAILED_SETUP) or forgotten (SUCCEEDED).
//
// It fails with ErrAttemptEnded if the attempt has already ended, with
// ErrTerminal if the job has, and with ErrNotAMove if the decision moves
// the job or the task in a way the lifecycle does not; then nothing is
// written.
func (s *Store) EndAttempt(ctx context.Context, a *Attempt, o Observed, d strategy.Decision, f Facts) error {
	return s.tx(ctx, func(tx *dbTx) error {
		now := s.now()
		at, err := s.ending(ctx, tx, a.ID)
		if err != nil {
			return err
		}
		j, n, err := decide(ctx, tx, at, d)
		if err != nil {
			return err
		}

		codes := []byte("[]")
		if o.ExitCodes != nil {
			if codes, err = json.Marshal(o.ExitCodes); err != nil {
				return err
			}
		}
		var kept any
		if n.Job.Terminal() && f.KeptUntil != nil {
			kept = fmtTime(*f.KeptUntil)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ?, outcome = ?, exit_codes = ?, reason = ?, action = ?, decision = ?, ended_at = ?,
			kept_until = ? WHERE id = ?`, lifecycle.AttemptEnded, o.Outcome, string(codes), o.Reason, d.Action, d.Reason, fmtTime(now), kept, a.ID); err != nil {
			return err
		}
		if err := addCost(ctx, tx, j.ID, a.ID, o.Cost, len(a.InstanceIDs) > 0, true); err != nil {
			return err
		}
		var taskEnded, preempted any
		if n.Task.Terminal() {
			taskEnded = fmtTime(now)
		}
		if d.Action == strategy.Recover {
			b, _ := json.Marshal(schema.Placement{Cloud: at.cloud, Region: at.region, Zone: at.zone})
			preempted = string(b)
		}
		var size any
		if d.Action == strategy.Escalate && d.Size != nil {
			size = sizeColumn(d.Size)
		}
		// A switch to on-demand holds for the task's later attempts.
		var onDemand any
		if d.Action == strategy.Recover && d.OnDemand {
			onDemand = 1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, recovery_count = ?, restarts_on_errors = ?,
			preempted_in = COALESCE(?, preempted_in), launch_round = 0, ended_at = COALESCE(?, ended_at), size = COALESCE(?, size),
			on_demand = COALESCE(?, on_demand) WHERE job_id = ? AND idx = ?`,
			n.Task, d.Counters.RecoveryCount, d.Counters.RestartsOnErrors, preempted, taskEnded, size, onDemand, j.ID, at.Task); err != nil {
			return err
		}
		var jobEnded, next any
		if n.Job.Terminal() {
			jobEnded = fmtTime(now)
		}
		if d.Action == strategy.Recover || d.Action == strategy.Restart || d.Action == strategy.Escalate {
			next = fmtTimePtr(f.NextActionAt)
		}
		advance := 0
		if n.NextTask {
			advance = 1
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, failure_reason = COALESCE(?, failure_reason),
			next_action_at = ?, exit_codes = ?, current_task = current_task + ?, ended_at = ?,
			recovery_count = (SELECT COALESCE(SUM(recovery_count), 0) FROM tasks WHERE job_id = ?),
			restarts_on_errors = (SELECT COALESCE(SUM(restarts_on_errors), 0) FROM tasks WHERE job_id = ?)
			WHERE id = ?`,
			n.Job, n.StatusReason, nullStr(n.Failure), next, string(codes), advance, jobEnded, j.ID, j.ID, j.ID); err != nil {
			return err
		}
		if n.Requeue {
			// Preempted by priority: it waits for admission again.
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET `+requeueSQL+` WHERE id = ?`, j.ID); err != nil {
				return err
			}
		}
		if n.Others != "" {
			// The tasks after the one that ended the job never run.
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ? WHERE job_id = ? AND status = ?`, n.Others, j.ID, lifecycle.Pending); err != nil {
				return err
			}
		}
		if err := confirmed(ctx, tx, j.ID, at.Task, j.inputKey, f, now); err != nil {
			return err
		}
		if !n.Job.Terminal() || j.inputKey == "" {
			return nil
		}
		switch n.Job {
		case lifecycle.Failed, lifecycle.FailedSetup:
			if f.Verdict != nil && f.Verdict.Kind == strategy.Flaky {
				// Not the inputs' own failure: never refused.
				_, err := tx.ExecContext(ctx, `DELETE FROM known_failures WHERE input_key = ?`, j.inputKey)
				return err
			}
			if o.Outcome != strategy.UserFailure && o.Outcome != strategy.SetupFailure {
				// FAILED by a limit (max_duration, max_recoveries, strategy
				// NONE): the inputs are not known to fail.
				return nil
			}
			// A deterministic failure of the user's code, not of the cloud,
			// at the size the attempt asked for.
			var size sql.NullString
			if err := tx.QueryRowContext(ctx, `SELECT size FROM attempts WHERE id = ?`, a.ID).Scan(&size); err != nil {
				return err
			}
			failedAt, err := readSize(size)
			if err != nil {
				return fmt.Errorf("attempt %d size: %w", a.ID, err)
			}
			return recordFailure(ctx, tx, &KnownFailure{InputKey: j.inputKey, JobID: j.ID, TaskName: f.TaskName,
				Status: n.Job, ExitCodes: o.ExitCodes, LogPath: f.LogPath, Size: failedAt}, now)
		case lifecycle.Succeeded:
			_, err := tx.ExecContext(ctx, `DELETE FROM known_failures WHERE input_key = ?`, j.inputKey)
			return err
		}
		return nil
	})
}

// FinishJob ends a job that has no open attempt (cancelled before its next
// attempt, or failed by the controller) as d decides: d must end the job.
// Its unfinished tasks take the decision's status; its counters stay as
// they are, since no attempt ended. It fails with ErrOpenAttempt while an
// attempt is open, with ErrTerminal if the job has ended, and with
// ErrNotAMove for a move the lifecycle does not list; then nothing is
// written.
func (s *Store) FinishJob(ctx context.Context, jobID int64, d strategy.Decision) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, jobID); err != nil {
			return err
		}
		open, err := openAttempt(ctx, tx, jobID)
		if err != nil {
			return err
		}
		j, err := readJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		tasks, err := readTasks(ctx, tx, jobID)
		if err != nil {
			return err
		}
		n, err := lifecycle.Finish(j.Job, open, tasks, decision(d))
		if err != nil {
			return err
		}
		now := fmtTime(s.now())
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = '', failure_reason = COALESCE(?, failure_reason),
			next_action_at = NULL, ended_at = ? WHERE id = ?`, n.Job, nullStr(n.Failure), now, jobID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tasks SET status = ?, ended_at = COALESCE(ended_at, ?) WHERE job_id = ? AND status NOT IN `+terminalSQL,
			n.Others, now, jobID)
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
	return queryAll(ctx, s.db, scanLaunchTry, `SELECT job_id, task_idx, attempt, round, cloud, region, zone, class, message, at
		FROM launch_tries WHERE job_id = ? ORDER BY id`, jobID)
}

func scanLaunchTry(rows *sql.Rows) (LaunchTry, error) {
	var t LaunchTry
	var at string
	if err := rows.Scan(&t.JobID, &t.TaskIdx, &t.Attempt, &t.Round, &t.Cloud, &t.Region, &t.Zone, &t.Class, &t.Message, &at); err != nil {
		return LaunchTry{}, err
	}
	if p := parseTime(sql.NullString{String: at, Valid: true}); p != nil {
		t.At = *p
	}
	return t, nil
}
