package suite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"
)

// CommitRate measures how many small write transactions a SQLite file set
// up as the store is (WAL, synchronous NORMAL) commits per second from one
// writer: each is one UPDATE of one row, as most of the controller's are.
func CommitRate(ctx context.Context, dir string, n int) (float64, error) {
	path := filepath.Join(dir, "commits.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate&_busy_timeout=15000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO t (id, n) VALUES (1, 0)`); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE t SET n = n + 1 WHERE id = 1`); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}
