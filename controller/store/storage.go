package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// StorageSync is what one node's syncs of one bucket did in an attempt.
type StorageSync struct {
	TaskIdx, Attempt, Node int
	Path, Store, Bucket    string
	Mode                   string
	DownloadedAt           *time.Time
	DownloadedBytes        int64
	UploadedAt             *time.Time
	UploadedBytes          int64
	UploadedTotal          int64
	Error                  string
}

// RecordStorage keeps a node's latest report of its bucket syncs, one row
// per mount, replacing the last report.
func (s *Store) RecordStorage(ctx context.Context, a *Attempt, node int, syncs []StorageSync) error {
	return s.tx(ctx, func(tx *dbTx) error {
		for _, m := range syncs {
			var errText any
			if m.Error != "" {
				errText = m.Error
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO storage_syncs (attempt_id, node, path, store, bucket, mode,
				downloaded_at, downloaded_bytes, uploaded_at, uploaded_bytes, uploaded_total, error)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (attempt_id, node, path) DO UPDATE SET store = excluded.store, bucket = excluded.bucket,
				mode = excluded.mode, downloaded_at = excluded.downloaded_at, downloaded_bytes = excluded.downloaded_bytes,
				uploaded_at = excluded.uploaded_at, uploaded_bytes = excluded.uploaded_bytes,
				uploaded_total = excluded.uploaded_total, error = excluded.error`,
				a.ID, node, m.Path, m.Store, m.Bucket, m.Mode, fmtTimePtr(m.DownloadedAt), m.DownloadedBytes,
				fmtTimePtr(m.UploadedAt), m.UploadedBytes, m.UploadedTotal, errText); err != nil {
				return fmt.Errorf("record the bucket syncs of attempt %d: %w", a.ID, err)
			}
		}
		return nil
	})
}

// StorageSyncs lists a job's bucket syncs, by task, attempt, node and path.
func (s *Store) StorageSyncs(ctx context.Context, jobID int64) ([]StorageSync, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.task_idx, a.attempt, ss.node, ss.path, ss.store, ss.bucket, ss.mode,
		ss.downloaded_at, ss.downloaded_bytes, ss.uploaded_at, ss.uploaded_bytes, ss.uploaded_total, ss.error
		FROM storage_syncs ss JOIN attempts a ON a.id = ss.attempt_id
		WHERE a.job_id = ? ORDER BY a.task_idx, a.attempt, ss.node, ss.path`, jobID)
	if err != nil {
		return nil, fmt.Errorf("read the bucket syncs of job %d: %w", jobID, err)
	}
	defer rows.Close()
	var out []StorageSync
	for rows.Next() {
		var m StorageSync
		var down, up, errText sql.NullString
		if err := rows.Scan(&m.TaskIdx, &m.Attempt, &m.Node, &m.Path, &m.Store, &m.Bucket, &m.Mode,
			&down, &m.DownloadedBytes, &up, &m.UploadedBytes, &m.UploadedTotal, &errText); err != nil {
			return nil, err
		}
		m.DownloadedAt, m.UploadedAt, m.Error = parseTime(down), parseTime(up), errText.String
		out = append(out, m)
	}
	return out, rows.Err()
}
