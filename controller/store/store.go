package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"sortie/controller/lifecycle"
)

// migrations holds each migration's SQLite text (migrations/*.sql) and its
// PostgreSQL twin (migrations/postgres/*.sql).
//
//go:embed migrations/*.sql migrations/postgres/*.sql
var migrations embed.FS

// ErrNotFound is returned for a job id that does not exist.
var ErrNotFound error = storeError{"not found", "not found"}

// ErrTerminal is wrapped by the error when a change would touch a job that
// has ended: a terminal status never changes.
var ErrTerminal = lifecycle.ErrTerminal

// ErrAttemptEnded is wrapped by the error when an attempt is changed after
// it ended, or ended a second time: exit codes are written exactly once.
var ErrAttemptEnded = lifecycle.ErrAttemptEnded

// ErrNotAMove is wrapped by the error (a *lifecycle.MoveError) when a
// change would move a status in a way the lifecycle's tables do not list.
var ErrNotAMove = lifecycle.ErrNotAMove

// Store is the state of one SORTIE_HOME, or of a team's PostgreSQL. The
// Store Open returns writes for whoever calls it; Fenced (lease.go) gives
// a handle on the same store whose every write checks a replica's lease.
type Store struct {
	*conn
	// fence, when set, is checked at the start of every write transaction.
	fence *Fence
}

// conn is what every handle on one store shares.
type conn struct {
	db  *db
	d   *dialect
	now func() time.Time
	// wmu lets one write transaction of this process at a time ask SQLite
	// for the write lock. A writer that finds the lock taken sleeps in
	// SQLite's busy handler (1ms, 2ms, 5ms ... 100ms between tries), so a
	// burst of the controller's goroutines would wait on each other in
	// long sleeps; queued on a mutex they follow each other at once.
	// Other processes (the CLI) still meet the busy timeout, rarely.
	// PostgreSQL takes row locks, not a database lock: its writers do not
	// queue here.
	wmu sync.Mutex
	// where and busy say which store a busy error is about (the file, or
	// the URL without its password), and how long a writer waited for
	// another's lock.
	where string
	busy  time.Duration
	// observeTx, when set, is told how long each write transaction took,
	// the wait for the write lock included (the controller's metrics).
	observeTx atomic.Pointer[func(time.Duration)]
	// sources are the migrations' texts (the embedded ones).
	sources fs.FS
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
// controller, a CLI) to let go of the store's write lock, or on
// PostgreSQL of a row it needs (lock_timeout), before it fails with
// ErrBusy.
const BusyTimeout = 15 * time.Second

// ErrBusy is wrapped by the error of a write that waited BusyTimeout for
// another process's write lock.
var ErrBusy error = storeError{"the store is busy", "busy"}

// storeError is ErrNotFound or ErrBusy, which say so by a method to the
// packages that answer them without importing the store (the API: 404 and
// 503).
type storeError struct{ msg, kind string }

func (e storeError) Error() string  { return e.msg }
func (e storeError) NotFound() bool { return e.kind == "not found" }
func (e storeError) Busy() bool     { return e.kind == "busy" }

// Open opens (creating if needed) the SQLite database at path and applies
// pending migrations. now is the clock for timestamps; nil means time.Now.
func Open(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	return open(ctx, path, now, BusyTimeout)
}

// OpenURL opens the store at u and applies pending migrations: a
// postgres:// or postgresql:// URL is a PostgreSQL database (which must
// exist, with a role that may create tables in it); sqlite:PATH or a plain
// path is a SQLite file, as Open. now is the clock for timestamps; nil
// means time.Now.
func OpenURL(ctx context.Context, u string, now func() time.Time) (*Store, error) {
	if IsPostgres(u) {
		return openPostgres(ctx, u, now, BusyTimeout)
	}
	path := strings.TrimPrefix(u, "sqlite:")
	if path == "" {
		return nil, fmt.Errorf("store %q: no file named; give postgres://USER@HOST/DB, sqlite:PATH or a path", u)
	}
	return open(ctx, path, now, BusyTimeout)
}

// IsPostgres says whether the store URL u names a PostgreSQL database.
func IsPostgres(u string) bool {
	lower := strings.ToLower(u)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Redact returns the store URL u without its password, for messages.
func Redact(u string) string {
	if !IsPostgres(u) {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return "postgres://(a URL that does not parse)"
	}
	return p.Redacted()
}

func open(ctx context.Context, path string, now func() time.Time, busy time.Duration) (*Store, error) {
	// _txlock=immediate takes the write lock at BEGIN, so two processes (the
	// CLI and the daemon) never deadlock upgrading a read lock. Reads run
	// outside transactions and take no lock a writer holds (WAL).
	// SQLite gives the store's WAL and shared-memory files the mode of the
	// store's own file, which holds specs and env values: it is made
	// private to its owner first.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the store %s: %w", path, err)
	}
	f.Close()
	sdb, err := sql.Open("sqlite3", sqliteDSN(path, busy))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Every connection the pool opens stays open: one closed when more
	// than the default two were idle at once was opened again at the next
	// busy moment, its pragmas run and its statements prepared again.
	sdb.SetMaxOpenConns(sqliteConns)
	sdb.SetMaxIdleConns(sqliteConns)
	return start(ctx, sdb, &dialect{}, path, now, busy)
}

// stmtCacheSize is how many prepared statements each SQLite connection
// keeps for reuse, by their text. Preparing a statement (parsing the SQL,
// planning it) cost more than running most of the store's: a job's steps
// run the same few dozen statements over and over. The cache is a
// connection's own, least recently used out first; a statement a
// connection still runs is not in it, so two uses never share one.
const stmtCacheSize = 128

// sqliteConns is how many connections to a SQLite store a process keeps:
// reads run at once on them, writes take turns.
const sqliteConns = 4

// sqliteDSN is the go-sqlite3 data source name of the store file at path.
func sqliteDSN(path string, busy time.Duration) string {
	return fmt.Sprintf("file:%s?_journal_mode=WAL&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL&_stmt_cache_size=%d",
		path, busy.Milliseconds(), stmtCacheSize)
}

func openPostgres(ctx context.Context, u string, now func() time.Time, busy time.Duration) (*Store, error) {
	where := Redact(u)
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		// pgx's message may quote the URL: say only what is wrong with it.
		return nil, fmt.Errorf("store %s: not a PostgreSQL URL pgx can read; write postgres://USER:PASSWORD@HOST:PORT/DATABASE (%v)", where, redactErr(err, u))
	}
	// A writer waits for another's row lock as long as a SQLite writer
	// waits for the write lock, unless the URL says otherwise.
	if _, ok := cfg.RuntimeParams["lock_timeout"]; !ok {
		cfg.RuntimeParams["lock_timeout"] = fmt.Sprint(busy.Milliseconds())
	}
	sdb := stdlib.OpenDB(*cfg)
	sdb.SetMaxOpenConns(8)
	sdb.SetMaxIdleConns(8)
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("store %s: cannot connect; check that the server runs, and the URL's host, port, user, password and database (%v)", where, redactErr(err, u))
	}
	return start(ctx, sdb, &dialect{postgres: true}, where, now, busy)
}

// redactErr is err's text with u's password, if any, cut out.
func redactErr(err error, u string) string {
	msg := err.Error()
	if p, perr := url.Parse(u); perr == nil && p.User != nil {
		if pw, ok := p.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// start makes the Store of an opened database and migrates it.
func start(ctx context.Context, sdb *sql.DB, d *dialect, where string, now func() time.Time, busy time.Duration) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{conn: &conn{db: &db{rebound[*sql.DB]{sdb, d}}, d: d, now: now, where: where, busy: busy, sources: migrations}}
	// Opening a new store switches it to WAL, which SQLite does without
	// waiting for a lock: two processes opening one new home at once (a CLI
	// and the daemon it starts) can find it busy. That passes in moments.
	err := s.migrate(ctx)
	for deadline := time.Now().Add(min(10*time.Second, busy)); d.busy(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			sdb.Close()
			return nil, fmt.Errorf("open %s: %w", where, ctx.Err())
		case <-time.After(20 * time.Millisecond):
			err = s.migrate(ctx)
		}
	}
	if err != nil {
		sdb.Close()
		if d.busy(err) {
			return nil, s.busyError(err)
		}
		return nil, fmt.Errorf("migrate %s: %w", where, err)
	}
	return s, nil
}

// busyError says what a write that found the store locked waited for.
func (s *Store) busyError(err error) error {
	return fmt.Errorf("%w: another process (the controller, or another sortie command) has held the write lock of %s for %s; try again in a moment (%v)",
		ErrBusy, s.where, s.busy, err)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrationNames returns the names of the SQLite migrations, in order.
func migrationNames(src fs.FS) ([]string, error) {
	paths, err := fs.Glob(src, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimPrefix(p, "migrations/")
	}
	sort.Strings(names)
	return names, nil
}

// migrationText returns migration name's text for the dialect's database.
func (s *Store) migrationText(name string) (string, error) {
	if !s.d.postgres {
		b, err := fs.ReadFile(s.sources, "migrations/"+name)
		return string(b), err
	}
	b, err := fs.ReadFile(s.sources, "migrations/postgres/"+name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("migration %s has no PostgreSQL twin: write controller/store/migrations/postgres/%s beside it", name, name)
	}
	return string(b), err
}

func (s *Store) migrate(ctx context.Context) error {
	names, err := migrationNames(s.sources)
	if err != nil {
		return err
	}
	// A store that has every migration needs no write: reading which it has
	// takes no lock a writer holds, so a command opening the store never
	// waits for the controller's writes just to open it.
	done, err := s.migrated(ctx, names)
	if err != nil {
		if s.d.busy(err) {
			return err
		}
		return fmt.Errorf("read which migrations are applied: %w", err)
	}
	if done {
		return nil
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
	applied, err := queryAll(ctx, s.db, column[string], `SELECT name FROM migrations`)
	if s.d.noTable(err) {
		return false, nil // a new store: the writing path makes it
	}
	if err != nil {
		// Busy (which Open waits out) or worse, such as a full disk:
		// never a reason to write.
		return false, err
	}
	for _, n := range names {
		if !slices.Contains(applied, n) {
			return false, nil
		}
	}
	return true, nil
}

// migrationLock is the PostgreSQL advisory lock key the processes
// migrating one database take in turn ("sortie" in ASCII).
const migrationLock = 0x736f72746965

func (s *Store) applyMigration(ctx context.Context, name string) error {
	body, err := s.migrationText(name)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.postgres {
		// SQLite's write lock keeps two processes' migrations apart; on
		// PostgreSQL this lock does, until the transaction ends.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(migrationLock)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if err := tx.execScript(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, name, fmtTime(s.now())); err != nil {
		return err
	}
	return tx.Commit()
}

// maxTries bounds how often a transaction PostgreSQL aborted to keep
// transactions apart (a deadlock, a serialization failure) is run again.
const maxTries = 10

// tx runs fn in one write transaction. On PostgreSQL, fn may run again
// when the database aborts the transaction to keep it apart from another
// (a deadlock): fn sets what it returns rather than adding to it.
func (s *Store) tx(ctx context.Context, fn func(tx *dbTx) error) error {
	return s.txWith(ctx, nil, fn)
}

// txWith is tx begun with opts (nil: the database's defaults).
func (s *Store) txWith(ctx context.Context, opts *sql.TxOptions, fn func(tx *dbTx) error) error {
	if obs := s.observeTx.Load(); obs != nil {
		start := time.Now()
		defer func() { (*obs)(time.Since(start)) }()
	}
	if !s.d.postgres {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	var err error
	for try := 1; ; try++ {
		err = s.tx1(ctx, opts, fn)
		if !s.d.retryable(err) || try == maxTries {
			break
		}
		if werr := s.retryWait(ctx, try); werr != nil {
			return werr
		}
	}
	if s.d.busy(err) || s.d.retryable(err) {
		return s.busyError(err)
	}
	return err
}

func (s *Store) tx1(ctx context.Context, opts *sql.TxOptions, fn func(tx *dbTx) error) error {
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.checkFence(ctx, tx); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// retryWait waits a few random milliseconds before try+1, more after each
// try, so two transactions that deadlocked do not meet again at once.
func (s *Store) retryWait(ctx context.Context, try int) error {
	d := time.Duration(1+rand.IntN(5*try)) * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// exec runs one statement outside a transaction, as tx runs a transaction.
func (s *Store) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.execResult(ctx, q, args...)
	return err
}

func (s *Store) execResult(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if s.fence != nil {
		// A write under a lease checks it first, in one transaction.
		var res sql.Result
		err := s.tx(ctx, func(tx *dbTx) error {
			var err error
			res, err = tx.ExecContext(ctx, q, args...)
			return err
		})
		return res, err
	}
	if !s.d.postgres {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	var res sql.Result
	var err error
	for try := 1; ; try++ {
		res, err = s.db.ExecContext(ctx, q, args...)
		if !s.d.retryable(err) || try == maxTries {
			break
		}
		if werr := s.retryWait(ctx, try); werr != nil {
			return nil, werr
		}
	}
	if s.d.busy(err) || s.d.retryable(err) {
		return nil, s.busyError(err)
	}
	return res, err
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
