package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// JobsWithLogsEndedBefore returns up to limit jobs that ended before t and
// whose kept logs have not been removed, oldest first.
func (s *Store) JobsWithLogsEndedBefore(ctx context.Context, t time.Time, limit int) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, ended_at FROM jobs WHERE logs_removed_at IS NULL AND ended_at IS NOT NULL AND ended_at < ?
		AND status IN `+terminalSQL+` ORDER BY ended_at LIMIT ?`, fmtTime(t.Add(time.Second)), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		var ended sql.NullString
		if err := rows.Scan(&id, &ended); err != nil {
			return nil, err
		}
		// Compared as times: RFC 3339 text with trimmed fractions does not
		// sort exactly, hence the second of slack above.
		if e := parseTime(ended); e != nil && e.Before(t) {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// MarkLogsRemoved records that job id's kept logs were removed at, and why.
func (s *Store) MarkLogsRemoved(ctx context.Context, id int64, at time.Time, reason string) error {
	return s.exec(ctx, `UPDATE jobs SET logs_removed_at = ?, logs_removed_reason = ? WHERE id = ? AND logs_removed_at IS NULL`,
		fmtTime(at), reason, id)
}

// LogsRemoved says when job id's kept logs were removed and why; a nil
// time while they are kept.
func (s *Store) LogsRemoved(ctx context.Context, id int64) (*time.Time, string, error) {
	var at, reason sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT logs_removed_at, logs_removed_reason FROM jobs WHERE id = ?`, id).Scan(&at, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, "", err
	}
	return parseTime(at), reason.String, nil
}
