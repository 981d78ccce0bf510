package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// Every method that changes a job's, a task's or an attempt's status reads
// what it changes first, in the transaction that writes it, asks the
// lifecycle's transition for the event (lifecycle/transitions.go) what to
// write, and writes that: a move the lifecycle refuses is an error and
// nothing is written. On PostgreSQL, where several processes write at once
// under READ COMMITTED, each such transaction first locks the job's row
// (dialect.lockJob), so what it reads is what it changes.

// jobNow is what a status change reads of a job.
type jobNow struct {
	lifecycle.Job
	inputKey string
}

func readJob(ctx context.Context, tx *dbTx, id int64) (jobNow, error) {
	j := jobNow{Job: lifecycle.Job{ID: id}}
	var key sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT status, cancel_requested, input_key FROM jobs WHERE id = ?`, id).
		Scan(&j.Status, &j.CancelRequested, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	j.inputKey = key.String
	return j, err
}

// readTasks returns the statuses of a job's tasks, in order.
func readTasks(ctx context.Context, tx *dbTx, job int64) ([]lifecycle.Task, error) {
	return queryAll(ctx, tx, func(rows *sql.Rows) (t lifecycle.Task, err error) {
		err = rows.Scan(&t.Idx, &t.Status)
		return
	}, `SELECT idx, status FROM tasks WHERE job_id = ? ORDER BY idx`, job)
}

func readTask(ctx context.Context, tx *dbTx, job int64, idx int) (lifecycle.Task, error) {
	t := lifecycle.Task{Idx: idx}
	err := tx.QueryRowContext(ctx, `SELECT status FROM tasks WHERE job_id = ? AND idx = ?`, job, idx).Scan(&t.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("job %d task %d: %w", job, idx, ErrNotFound)
	}
	return t, err
}

// attemptNow is what a state change reads of an attempt.
type attemptNow struct {
	lifecycle.Attempt
	cloud        string
	region, zone string
}

func readAttempt(ctx context.Context, tx *dbTx, id int64) (attemptNow, error) {
	var a attemptNow
	err := tx.QueryRowContext(ctx, `SELECT job_id, task_idx, attempt, state, cloud, region, zone FROM attempts WHERE id = ?`, id).
		Scan(&a.Job, &a.Task, &a.Attempt.Attempt, &a.State, &a.cloud, &a.region, &a.zone)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("attempt %d: %w", id, ErrNotFound)
	}
	return a, err
}

// openAttempt says whether the job has an attempt that has not ended and
// is not replaced: a replaced attempt (its node under a preemption notice)
// is the one overlap allowed.
func openAttempt(ctx context.Context, tx *dbTx, jobID int64) (bool, error) {
	var open int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM attempts WHERE job_id = ? AND replaced_at IS NULL AND `+openSQL, jobID).Scan(&open); err != nil {
		return false, err
	}
	return open > 0, nil
}

// decision is the strategy's decision as the lifecycle reads it.
func decision(d strategy.Decision) lifecycle.Decision {
	return lifecycle.Decision{Action: string(d.Action), Status: d.Status, Reason: d.Reason}
}
