package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// KnownFailure is a task input key whose job ended FAILED or FAILED_SETUP.
type KnownFailure struct {
	InputKey  string
	JobID     int64
	TaskName  string
	Status    lifecycle.Status
	ExitCodes []*int
	LogPath   string
	// Size is the size an escalation had chosen for the attempt that
	// failed; nil for the task's own resources (and for every record
	// written before escalation existed).
	Size       *strategy.Size
	RecordedAt time.Time
	// LogsRemovedAt is when the sweep removed the failed job's kept logs
	// (controller.log_retention); nil while they are kept.
	LogsRemovedAt *time.Time
	// Owner is the owner of the job that failed ("" before owners).
	Owner string
	// JobName and Task are the failed job's name and the position of its
	// task that failed; "" and nil once the job is no longer stored.
	JobName string
	Task    *int
	// Verdict is strategy.Deterministic when a confirmation run failed
	// the same way (job_recovery.confirm_failures), "" for a failure not
	// confirmed; Evidence is then the two attempts, the failed one first.
	Verdict  strategy.VerdictKind
	Evidence []strategy.Evidence
}

func recordFailure(ctx context.Context, tx *dbTx, f *KnownFailure, now time.Time) error {
	codes, _ := json.Marshal(f.ExitCodes)
	_, err := tx.ExecContext(ctx, `INSERT INTO known_failures (input_key, job_id, task_name, status, exit_codes, log_path, recorded_at, size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(input_key) DO UPDATE SET job_id = excluded.job_id, task_name = excluded.task_name, status = excluded.status,
			exit_codes = excluded.exit_codes, log_path = excluded.log_path, recorded_at = excluded.recorded_at, size = excluded.size`,
		f.InputKey, f.JobID, f.TaskName, f.Status, string(codes), f.LogPath, fmtTime(now), sizeColumn(f.Size))
	return err
}

// KnownFailure returns the record for key, or nil when the key has not failed.
func (s *Store) KnownFailure(ctx context.Context, key string) (*KnownFailure, error) {
	fs, err := s.findFailures(ctx, `WHERE input_key = ?`, key)
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	return fs[0], nil
}

// KnownFailures lists every record, newest first.
func (s *Store) KnownFailures(ctx context.Context) ([]*KnownFailure, error) {
	return s.findFailures(ctx, `ORDER BY recorded_at DESC`)
}

// ErrAmbiguous is returned when a key prefix matches more than one record.
var ErrAmbiguous = errors.New("key prefix matches more than one known failure")

// ForgetFailure removes the record whose key starts with prefix and returns
// its full key.
func (s *Store) ForgetFailure(ctx context.Context, prefix string) (string, error) {
	key, _, err := s.ForgetFailureBy(ctx, prefix, "", nil)
	return key, err
}

// ForgetFailureBy is ForgetFailure asked by the user by, recorded as an
// action; allow, when set, sees the record before it goes and may refuse
// it (the server's owner check), its error returned as it is. It returns
// the full key and the record's job.
func (s *Store) ForgetFailureBy(ctx context.Context, prefix, by string, allow func(*KnownFailure) error) (string, int64, error) {
	var key string
	var job int64
	err := s.tx(ctx, func(tx *dbTx) error {
		keys, err := queryAll(ctx, tx, column[string], `SELECT input_key FROM known_failures WHERE substr(input_key, 1, ?) = ?
			UNION SELECT input_key FROM confirmations WHERE verdict = 'flaky' AND substr(input_key, 1, ?) = ? LIMIT 2`, len(prefix), prefix, len(prefix), prefix)
		if err != nil {
			return err
		}
		switch len(keys) {
		case 0:
			return ErrNotFound
		case 2:
			return ErrAmbiguous
		}
		key = keys[0]
		fs, err := findFailures(ctx, tx, `WHERE input_key = ?`, key)
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			// Inputs found flaky only: the owner of the latest flaky job
			// decides.
			if fs, err = flakyOwner(ctx, tx, key); err != nil {
				return err
			}
		}
		if len(fs) == 1 {
			job = fs[0].JobID
			if allow != nil {
				if err := allow(fs[0]); err != nil {
					return err
				}
			}
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM known_failures WHERE input_key = ?`, key); err != nil {
			return err
		}
		if err := forgetConfirmations(ctx, tx, key); err != nil {
			return err
		}
		return recordAction(ctx, tx, Action{At: s.now(), Actor: by, Verb: "forget", JobID: job, Detail: key})
	})
	return key, job, err
}

// ForgetAllFailures removes every record and returns how many there were.
func (s *Store) ForgetAllFailures(ctx context.Context) (int64, error) {
	return s.ForgetAllFailuresBy(ctx, "", "")
}

// ForgetAllFailuresBy is ForgetAllFailures asked by the user by, recorded
// as one action; a non-empty owner forgets only the failures of that
// owner's jobs.
func (s *Store) ForgetAllFailuresBy(ctx context.Context, by, owner string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *dbTx) error {
		q, args := `DELETE FROM known_failures`, []any{}
		if owner != "" {
			q += ` WHERE job_id IN (SELECT id FROM jobs WHERE owner = ?)`
			args = append(args, owner)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		q = `DELETE FROM confirmations WHERE verdict = 'flaky'`
		if owner != "" {
			q += ` AND job_id IN (SELECT id FROM jobs WHERE owner = ?)`
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
		return recordAction(ctx, tx, Action{At: s.now(), Actor: by, Verb: "forget", Detail: fmt.Sprintf("all (%d)", n)})
	})
	return n, err
}

func (s *Store) findFailures(ctx context.Context, tail string, args ...any) ([]*KnownFailure, error) {
	return findFailures(ctx, s.db, tail, args...)
}

func findFailures(ctx context.Context, q querier, tail string, args ...any) ([]*KnownFailure, error) {
	return queryAll(ctx, q, scanFailure, `SELECT input_key, job_id, task_name, status, exit_codes, log_path, recorded_at, size,
		(SELECT logs_removed_at FROM jobs WHERE jobs.id = known_failures.job_id),
		(SELECT owner FROM jobs WHERE jobs.id = known_failures.job_id),
		(SELECT name FROM jobs WHERE jobs.id = known_failures.job_id),
		(SELECT current_task FROM jobs WHERE jobs.id = known_failures.job_id),
		(SELECT verdict FROM confirmations c WHERE c.job_id = known_failures.job_id AND c.verdict = 'deterministic' ORDER BY c.decided_at DESC LIMIT 1),
		(SELECT failed FROM confirmations c WHERE c.job_id = known_failures.job_id AND c.verdict = 'deterministic' ORDER BY c.decided_at DESC LIMIT 1),
		(SELECT confirming FROM confirmations c WHERE c.job_id = known_failures.job_id AND c.verdict = 'deterministic' ORDER BY c.decided_at DESC LIMIT 1)
		FROM known_failures `+tail, args...)
}

func scanFailure(rows *sql.Rows) (*KnownFailure, error) {
	var f KnownFailure
	var codes, size sql.NullString
	var at string
	var removed, owner, jobName sql.NullString
	var task sql.NullInt64
	var verdict, failed, confirming sql.NullString
	if err := rows.Scan(&f.InputKey, &f.JobID, &f.TaskName, &f.Status, &codes, &f.LogPath, &at, &size, &removed, &owner, &jobName, &task,
		&verdict, &failed, &confirming); err != nil {
		return nil, err
	}
	f.Verdict = strategy.VerdictKind(verdict.String)
	for _, e := range []*strategy.Evidence{readEvidence(failed), readEvidence(confirming)} {
		if e != nil {
			f.Evidence = append(f.Evidence, *e)
		}
	}
	f.JobName = jobName.String
	if task.Valid {
		n := int(task.Int64)
		f.Task = &n
	}
	f.LogsRemovedAt = parseTime(removed)
	f.Owner = owner.String
	// A size that cannot be read is left out: the record still refuses
	// its inputs, which is what it is for.
	f.Size, _ = readSize(size)
	if codes.Valid {
		_ = json.Unmarshal([]byte(codes.String), &f.ExitCodes)
	}
	if p := parseTime(sql.NullString{String: at, Valid: true}); p != nil {
		f.RecordedAt = *p
	}
	return &f, nil
}
