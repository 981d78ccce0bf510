package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
	var key string
	err := s.tx(ctx, func(tx *dbTx) error {
		rows, err := tx.QueryContext(ctx, `SELECT input_key FROM known_failures WHERE substr(input_key, 1, ?) = ? LIMIT 2`, len(prefix), prefix)
		if err != nil {
			return err
		}
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		rows.Close()
		switch len(keys) {
		case 0:
			return ErrNotFound
		case 2:
			return ErrAmbiguous
		}
		key = keys[0]
		_, err = tx.ExecContext(ctx, `DELETE FROM known_failures WHERE input_key = ?`, key)
		return err
	})
	return key, err
}

// ForgetAllFailures removes every record and returns how many there were.
func (s *Store) ForgetAllFailures(ctx context.Context) (int64, error) {
	res, err := s.execResult(ctx, `DELETE FROM known_failures`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *Store) findFailures(ctx context.Context, tail string, args ...any) ([]*KnownFailure, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT input_key, job_id, task_name, status, exit_codes, log_path, recorded_at, size,
		(SELECT logs_removed_at FROM jobs WHERE jobs.id = known_failures.job_id) FROM known_failures `+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*KnownFailure
	for rows.Next() {
		var f KnownFailure
		var codes, size sql.NullString
		var at string
		var removed sql.NullString
		if err := rows.Scan(&f.InputKey, &f.JobID, &f.TaskName, &f.Status, &codes, &f.LogPath, &at, &size, &removed); err != nil {
			return nil, err
		}
		f.LogsRemovedAt = parseTime(removed)
		// A size that cannot be read is left out: the record still refuses
		// its inputs, which is what it is for.
		f.Size, _ = readSize(size)
		if codes.Valid {
			_ = json.Unmarshal([]byte(codes.String), &f.ExitCodes)
		}
		if p := parseTime(sql.NullString{String: at, Valid: true}); p != nil {
			f.RecordedAt = *p
		}
		out = append(out, &f)
	}
	return out, rows.Err()
}
