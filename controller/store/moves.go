package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sortie/controller/lifecycle"
)

// Every method that changes a job's, a task's or an attempt's status reads
// what it changes first, in the transaction that writes it, and checks the
// move against the lifecycle's tables (lifecycle/moves.go): a move they do
// not list is refused and nothing is written. On PostgreSQL, where several
// processes write at once under READ COMMITTED, each such transaction first
// locks the job's row (dialect.lockJob), so what it reads is what it
// changes.

// jobNow is what a status change reads of a job.
type jobNow struct {
	id              int64
	status          lifecycle.Status
	cancelRequested bool
	inputKey        string
}

func readJob(ctx context.Context, tx *dbTx, id int64) (jobNow, error) {
	j := jobNow{id: id}
	var key sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT status, cancel_requested, input_key FROM jobs WHERE id = ?`, id).
		Scan(&j.status, &j.cancelRequested, &key)
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	j.inputKey = key.String
	return j, err
}

// ended fails with ErrTerminal when the job has ended.
func (j jobNow) ended() error {
	if j.status.Terminal() {
		return fmt.Errorf("job %d is %s: %w", j.id, j.status, ErrTerminal)
	}
	return nil
}

// taskNow is what a status change reads of one task.
type taskNow struct {
	idx    int
	status lifecycle.Status
}

// readTasks returns the statuses of a job's tasks, in order.
func readTasks(ctx context.Context, tx *dbTx, job int64) ([]taskNow, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx, status FROM tasks WHERE job_id = ? ORDER BY idx`, job)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []taskNow
	for rows.Next() {
		var t taskNow
		if err := rows.Scan(&t.idx, &t.status); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func readTask(ctx context.Context, tx *dbTx, job int64, idx int) (lifecycle.Status, error) {
	var st lifecycle.Status
	err := tx.QueryRowContext(ctx, `SELECT status FROM tasks WHERE job_id = ? AND idx = ?`, job, idx).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("job %d task %d: %w", job, idx, ErrNotFound)
	}
	return st, err
}

// attemptNow is what a state change reads of an attempt.
type attemptNow struct {
	job           int64
	task, attempt int
	state         lifecycle.AttemptState
	cloud         string
	region, zone  string
}

func readAttempt(ctx context.Context, tx *dbTx, id int64) (attemptNow, error) {
	var a attemptNow
	err := tx.QueryRowContext(ctx, `SELECT job_id, task_idx, attempt, state, cloud, region, zone FROM attempts WHERE id = ?`, id).
		Scan(&a.job, &a.task, &a.attempt, &a.state, &a.cloud, &a.region, &a.zone)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("attempt %d: %w", id, ErrNotFound)
	}
	return a, err
}

func (a attemptNow) moveTo(to lifecycle.AttemptState) error {
	return lifecycle.CheckAttempt(a.job, a.task, a.attempt, a.state, to)
}
