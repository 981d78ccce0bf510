package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Several processes may open a new home at once (a CLI and the daemon it
// starts, or two CLIs): every one must get a migrated store.
// On PostgreSQL, the processes migrating one new database take turns.
func TestConcurrentOpensOfANewStore(t *testing.T) { onEach(t, testConcurrentOpensOfANewStore) }

func testConcurrentOpensOfANewStore(t *testing.T, b backend) {
	ctx := context.Background()
	rounds := 20
	if b.name == "postgres" {
		rounds = 4 // a database is slower to make than a file
	}
	for round := 0; round < rounds; round++ {
		path := b.newStore(t)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := OpenURL(ctx, path, nil)
				if err != nil {
					errs <- err
					return
				}
				_, err = s.CreateJob(ctx, &Job{Name: "x", Spec: []byte(`{}`)}, []NewTask{{}})
				s.Close()
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// Opening a store that is already migrated takes no write lock: a command
// that only reads, or that writes later, does not wait for the controller's
// writes just to open the store.
func TestOpenOfAMigratedStoreDoesNotWaitForWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	writer, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tx, err := writer.BeginTx(ctx, nil) // holds the write lock until the end
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err = Open(ctx2, path, nil)
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer s.Close()
	if _, err := s.Jobs(ctx2, JobFilter{}); err != nil {
		t.Fatalf("read while another connection writes: %v", err)
	}
}

// With another connection holding the write lock (the controller in the
// middle of a write), every read works at once, and a write waits for the
// busy timeout and then says the store is busy: never a migration error.
func TestBusyStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateJob(ctx, &Job{Name: "x", Spec: []byte(`{}`)}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	writer, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tx, err := writer.BeginTx(ctx, nil) // holds the write lock until the end
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	s, err = open(ctx, path, nil, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer s.Close()
	reads := map[string]func() error{
		"jobs":          func() error { _, err := s.Jobs(ctx, JobFilter{}); return err },
		"job":           func() error { _, err := s.Job(ctx, id); return err },
		"tasks":         func() error { _, err := s.Tasks(ctx, id); return err },
		"attempts":      func() error { _, err := s.Attempts(ctx, id); return err },
		"launch tries":  func() error { _, err := s.LaunchTries(ctx, id); return err },
		"failures":      func() error { _, err := s.KnownFailures(ctx); return err },
		"retries":       func() error { _, err := s.Retries(ctx, id); return err },
		"open attempts": func() error { _, err := s.OpenAttempts(ctx); return err },
	}
	for name, read := range reads {
		if err := read(); err != nil {
			t.Errorf("%s while another connection writes: %v", name, err)
		}
	}
	_, err = s.RequestCancel(ctx, []int64{id})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "write lock of "+path) || strings.Contains(err.Error(), "migrat") {
		t.Errorf("a write on a busy store: %v; want ErrBusy naming the store, no migration", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestCancel(ctx, []int64{id}); err != nil {
		t.Errorf("the write once the lock is free: %v", err)
	}
}

// A store that lacks a migration, opened while another connection holds
// the write lock, says the store is busy rather than that a migration
// failed.
func TestMigratingABusyStoreSaysBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	writer, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE other (x)`); err != nil {
		t.Fatal(err)
	}
	_, err = open(ctx, path, nil, 50*time.Millisecond)
	if !errors.Is(err, ErrBusy) || strings.Contains(err.Error(), "migrate") {
		t.Errorf("open of a new store while another connection writes: %v; want it to say the store is busy", err)
	}
}

// A new SQLite store and its WAL are private to their owner whatever the
// umask: they hold specs and env values.
func TestANewStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateJob(context.Background(), &Job{Name: "a", Spec: []byte(`{}`)}, []NewTask{{}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s is %v, want 0600", p, m)
		}
	}
}

// Each SQLite connection keeps its prepared statements (sqliteDSN); a
// statement read from that cache must answer as a fresh one would: after
// another process changed the schema under it (a newer sortie migrating
// the home), with more statement texts in use than the cache holds, and
// over every connection of the pool at once.
func TestCachedStatementsAnswerAsFreshOnes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	if !strings.Contains(sqliteDSN(path, time.Second), fmt.Sprintf("_stmt_cache_size=%d", stmtCacheSize)) || stmtCacheSize < 1 {
		t.Fatalf("the store's DSN %q keeps no prepared statements", sqliteDSN(path, time.Second))
	}
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const q = `SELECT * FROM jobs WHERE id = ?`
	columns := func() []string {
		t.Helper()
		rows, err := s.db.QueryContext(ctx, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	before := columns()
	other, err := sql.Open("sqlite3", sqliteDSN(path, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `ALTER TABLE jobs ADD COLUMN added_by_a_newer_build TEXT`); err != nil {
		t.Fatal(err)
	}
	if after := columns(); len(after) != len(before)+1 || after[len(after)-1] != "added_by_a_newer_build" {
		t.Fatalf("after another connection added a column, a cached SELECT * has columns %v (before: %v)", after, before)
	}

	var ids []int64
	for i := range 8 {
		id, err := s.CreateJob(ctx, &Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`)}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Texts of every IN-list length up to 3*stmtCacheSize, from 8
	// goroutines over the pool's connections: each answer counts its own
	// list's jobs, never another statement's.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= 3*stmtCacheSize; n++ {
				args := make([]any, n)
				for i := range args {
					id := int64(-1 - i) // no such job
					if (i+g)%7 == 0 {
						id = ids[(i+g)%len(ids)]
					}
					args[i] = id
				}
				q := `SELECT COUNT(DISTINCT id) FROM jobs WHERE id IN (?` + strings.Repeat(`, ?`, n-1) + `)`
				var got int
				if err := s.db.QueryRowContext(ctx, q, args...).Scan(&got); err != nil {
					errs <- err
					return
				}
				distinct := map[any]bool{}
				for _, a := range args {
					if a.(int64) > 0 {
						distinct[a] = true
					}
				}
				if got != len(distinct) {
					errs <- fmt.Errorf("goroutine %d, %d ids: counted %d jobs, want %d", g, n, got, len(distinct))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The pool keeps every SQLite connection it opened: busy moments that use
// them all, one after another, open each once (its pragmas run and its
// statements prepared once), never closing one for being idle.
func TestSQLiteConnectionsStayOpen(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := range 5 {
		// sqliteConns reads at once, each holding its connection until
		// all have one.
		var rows []*sql.Rows
		for range sqliteConns {
			r, err := s.db.QueryContext(ctx, `SELECT id FROM jobs`)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		for _, r := range rows {
			r.Close()
		}
		st := s.db.c.Stats()
		if st.MaxIdleClosed != 0 || st.OpenConnections != sqliteConns {
			t.Fatalf("round %d: %d connections open, %d closed for being idle; want %d open, none closed",
				round, st.OpenConnections, st.MaxIdleClosed, sqliteConns)
		}
	}
}
