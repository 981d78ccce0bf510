// Package store keeps sortie's state in SQLite: jobs, their tasks, every
// attempt with its per-node exit codes, failed launch tries and known
// failures. Every state change is one transaction, so a controller killed at
// any moment finds a consistent store when it starts again.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3" // also the database/sql driver "sqlite3"

	"sortie/controller/lifecycle"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrNotFound is returned for a job id that does not exist.
var ErrNotFound = errors.New("not found")

// ErrTerminal is wrapped by the error when a change would touch a job that
// has ended: a terminal status never changes.
var ErrTerminal = lifecycle.ErrTerminal

// ErrAttemptEnded is wrapped by the error when an attempt is changed after
// it ended, or ended a second time: exit codes are written exactly once.
var ErrAttemptEnded = lifecycle.ErrAttemptEnded

// ErrNotAMove is wrapped by the error (a *lifecycle.MoveError) when a
// change would move a status in a way the lifecycle's tables do not list.
var ErrNotAMove = lifecycle.ErrNotAMove

// Store is the SQLite state of one SORTIE_HOME.
type Store struct {
	db  *sql.DB
	now func() time.Time
	// wmu lets one write transaction of this process at a time ask SQLite
	// for the write lock. A writer that finds the lock taken sleeps in
	// SQLite's busy handler (1ms, 2ms, 5ms ... 100ms between tries), so a
	// burst of the controller's goroutines would wait on each other in
	// long sleeps; queued on a mutex they follow each other at once.
	// Other processes (the CLI) still meet the busy timeout, rarely.
	wmu sync.Mutex
	// path and busy say which file a busy error is about, and how long a
	// writer waited for another process's write lock.
	path string
	busy time.Duration
	// observeTx, when set, is told how long each write transaction took,
	// the wait for the write lock included (the controller's metrics).
	observeTx atomic.Pointer[func(time.Duration)]
}

// ObserveTx makes fn be told how long each write transaction takes, from
// asking for the write lock to the commit; nil stops it.
func (s *Store) ObserveTx(fn func(time.Duration)) {
	if fn == nil {
		s.observeTx.Store(nil)
		return
	}
	s.observeTx.Store(&fn)
}

// BusyTimeout is how long a write waits for another process (the
// controller, a CLI) to let go of the store's write lock before it fails
// with ErrBusy.
const BusyTimeout = 15 * time.Second

// ErrBusy is wrapped by the error of a write that waited BusyTimeout for
// another process's write lock.
var ErrBusy = errors.New("the store is busy")

// Open opens (creating if needed) the database at path and applies pending
// migrations. now is the clock for timestamps; nil means time.Now.
func Open(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	return open(ctx, path, now, BusyTimeout)
}

func open(ctx context.Context, path string, now func() time.Time, busy time.Duration) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	// _txlock=immediate takes the write lock at BEGIN, so two processes (the
	// CLI and the daemon) never deadlock upgrading a read lock. Reads run
	// outside transactions and take no lock a writer holds (WAL).
	dsn := fmt.Sprintf("file:%s?_journal_mode=WAL&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL", path, busy.Milliseconds())
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, now: now, path: path, busy: busy}
	// Opening a new store switches it to WAL, which SQLite does without
	// waiting for a lock: two processes opening one new home at once (a CLI
	// and the daemon it starts) can find it busy. That passes in moments.
	err = s.migrate(ctx)
	for deadline := time.Now().Add(min(10*time.Second, busy)); isBusy(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			db.Close()
			return nil, fmt.Errorf("open %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
			err = s.migrate(ctx)
		}
	}
	if err != nil {
		db.Close()
		if isBusy(err) {
			return nil, s.busyError(err)
		}
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return s, nil
}

// busyError says what a write that found the store locked waited for.
func (s *Store) busyError(err error) error {
	return fmt.Errorf("%w: another process (the controller, or another sortie command) has held the write lock of %s for %s; try again in a moment (%v)",
		ErrBusy, s.path, s.busy, err)
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	// A store that has every migration needs no write: reading which it has
	// takes no lock a writer holds, so a command opening the store never
	// waits for the controller's writes just to open it.
	done, err := s.migrated(ctx, names)
	if err != nil {
		return err
	}
	if done {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	for _, name := range names {
		if err := s.applyMigration(ctx, name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// migrated says whether every one of names is applied; a store without a
// migrations table has none. A busy store is an error, which Open waits
// out, never a reason to write.
func (s *Store) migrated(ctx context.Context, names []string) (bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM migrations`)
	if isBusy(err) {
		return false, err
	}
	if err != nil {
		return false, nil // no table yet: the writing path finds out more
	}
	defer rows.Close()
	applied := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return false, err
		}
		applied[n] = true
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	for _, n := range names {
		if !applied[n] {
			return false, nil
		}
	}
	return true, nil
}

func (s *Store) applyMigration(ctx context.Context, name string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, name, fmtTime(s.now())); err != nil {
		return err
	}
	return tx.Commit()
}

// tx runs fn in one write transaction.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if obs := s.observeTx.Load(); obs != nil {
		start := time.Now()
		defer func() { (*obs)(time.Since(start)) }()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if isBusy(err) {
		return s.busyError(err)
	}
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := checkFence(ctx, tx); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if isBusy(err) {
			return s.busyError(err)
		}
		return err
	}
	err = tx.Commit()
	if isBusy(err) {
		return s.busyError(err)
	}
	return err
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func fmtTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

func parseTime(s sql.NullString) *time.Time {
	if !s.Valid || s.String == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return nil
	}
	return &t
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
