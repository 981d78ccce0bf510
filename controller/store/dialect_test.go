package store

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestNumberPlaceholders(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT * FROM jobs WHERE id = ?`, `SELECT * FROM jobs WHERE id = $1`},
		{`UPDATE t SET a = ?, b = ? WHERE id IN (?,?,?)`, `UPDATE t SET a = $1, b = $2 WHERE id IN ($3,$4,$5)`},
		{`SELECT '?' , ? FROM t`, `SELECT '?' , $1 FROM t`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`SELECT "odd?name" FROM t WHERE a = ?`, `SELECT "odd?name" FROM t WHERE a = $1`},
		{"SELECT a -- why? because\nFROM t WHERE b = ?", "SELECT a -- why? because\nFROM t WHERE b = $1"},
		{`SELECT /* ? */ a FROM t WHERE b = ?`, `SELECT /* ? */ a FROM t WHERE b = $1`},
		{`SELECT $$ ? $$, $tag$ ?$ $tag$, ?`, `SELECT $$ ? $$, $tag$ ?$ $tag$, $1`},
		{`CASE WHEN ? = '' THEN last_error ELSE ? END`, `CASE WHEN $1 = '' THEN last_error ELSE $2 END`},
		{`SELECT 'unclosed ?`, `SELECT 'unclosed ?`},
		{`SELECT ?`, `SELECT $1`},
	} {
		if got := numberPlaceholders(c.in); got != c.want {
			t.Errorf("numberPlaceholders(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	d := &dialect{postgres: true}
	q := `SELECT id FROM jobs WHERE id = ?`
	first, again := d.rebind(q), d.rebind(q)
	if first != `SELECT id FROM jobs WHERE id = $1` || again != first || d.cached.Load() != 1 {
		t.Errorf("rebind does not cache one text per statement: %d cached", d.cached.Load())
	}
	if (&dialect{}).rebind(q) != q {
		t.Errorf("SQLite's statements changed")
	}
}

// SQLite's GLOB and the regular expression PostgreSQL is given instead
// match the same names, each database asked itself.
func TestGlobMeansTheSameOnBoth(t *testing.T) {
	ctx := context.Background()
	lite, _ := openTest(t, sqliteBackend)
	pg, _ := openTest(t, postgresBackend)
	names := []string{"lab-1", "lab-12", "LAB-1", "lab-", "labs", "a.b", "a+b", "a[b", "x/y", "weird\\name", "ünïcode", "a]b", "a-b", "", "tab\there", "(x)", "$1", "^a"}
	patterns := []string{"lab-*", "lab-?", "lab-[0-9]", "lab-[^0-9]*", "*", "?", "a.b", "a+b", "a[[]b", "a[]]b", "a[-]b", "a[a-c]b",
		"x/*", "*\\*", "ü*", "?n*", "[", "a[b", "(x)", "$1", "^a", "*[!]*", "[^]]*"}
	for _, p := range patterns {
		for _, n := range names {
			var want, got bool
			if err := lite.db.QueryRowContext(ctx, `SELECT ? GLOB ?`, n, p).Scan(&want); err != nil {
				t.Fatalf("SQLite %q GLOB %q: %v", n, p, err)
			}
			cond, arg := pg.d.globSQL("CAST(? AS TEXT)", p)
			if err := pg.db.QueryRowContext(ctx, `SELECT `+cond, n, arg).Scan(&got); err != nil {
				t.Fatalf("PostgreSQL %q ~ %q (from %q): %v", n, arg, p, err)
			}
			if got != want {
				t.Errorf("name %q, pattern %q: SQLite's GLOB says %v, PostgreSQL's %q says %v", n, p, want, arg, got)
			}
		}
	}
}

// Every SQLite migration has a PostgreSQL twin of the same name, and every
// twin a SQLite migration.
func TestEveryMigrationHasAPostgresTwin(t *testing.T) {
	lite, err := migrationNames(migrations)
	if err != nil {
		t.Fatal(err)
	}
	twins, err := fs.Glob(migrations, "migrations/postgres/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var pg []string
	for _, p := range twins {
		pg = append(pg, strings.TrimPrefix(p, "migrations/postgres/"))
	}
	if len(lite) < 7 {
		t.Fatalf("found %d migrations", len(lite))
	}
	if diff := cmp.Diff(lite, pg); diff != "" {
		t.Errorf("SQLite migrations (-) and their PostgreSQL twins (+) differ; write the missing file under migrations/ or migrations/postgres/:\n%s", diff)
	}
}

// A migration without a twin stops a PostgreSQL store from opening with
// the file to write.
func TestAMissingTwinIsAnError(t *testing.T) {
	src := fstest.MapFS{
		"migrations/0001_a.sql":          {Data: []byte("CREATE TABLE a (x TEXT);")},
		"migrations/postgres/0001_a.sql": {Data: []byte("CREATE TABLE a (x TEXT);")},
		"migrations/0002_b.sql":          {Data: []byte("CREATE TABLE b (x TEXT);")},
	}
	s := &Store{conn: &conn{d: &dialect{postgres: true}, sources: src}}
	if _, err := s.migrationText("0001_a.sql"); err != nil {
		t.Fatal(err)
	}
	_, err := s.migrationText("0002_b.sql")
	if err == nil || !strings.Contains(err.Error(), "write controller/store/migrations/postgres/0002_b.sql") {
		t.Errorf("got %v, want an error naming the twin to write", err)
	}
}

// Applying every migration again changes nothing: each is recorded once,
// when it was first applied.
func TestMigrationsAppliedTwiceAreANoOp(t *testing.T) { onEach(t, testMigrationsAppliedTwiceAreANoOp) }

func testMigrationsAppliedTwiceAreANoOp(t *testing.T, b backend) {
	ctx := context.Background()
	s, u := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`)}, []NewTask{{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	applied := func() map[string]string {
		rows, err := s.db.QueryContext(ctx, `SELECT name, applied_at FROM migrations`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var n, at string
			if err := rows.Scan(&n, &at); err != nil {
				t.Fatal(err)
			}
			m[n] = at
		}
		return m
	}
	before := applied()
	names, _ := migrationNames(migrations)
	if len(before) != len(names) {
		t.Fatalf("%d migrations recorded, %d embedded", len(before), len(names))
	}
	for _, n := range names {
		if err := s.applyMigration(ctx, n); err != nil {
			t.Fatalf("%s again: %v", n, err)
		}
	}
	s2, err := OpenURL(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if diff := cmp.Diff(before, applied()); diff != "" {
		t.Errorf("migrations table after applying them again (-before +after):\n%s", diff)
	}
	if j, err := s2.Job(ctx, id); err != nil || j.Name != "a" {
		t.Errorf("job after migrating again: %+v %v", j, err)
	}
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{dir + "/a.db", "sqlite:" + dir + "/b.db"} {
		s, err := OpenURL(ctx, u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if s.d.postgres {
			t.Errorf("%s opened as PostgreSQL", u)
		}
		s.Close()
	}
	if _, err := OpenURL(ctx, "sqlite:", nil); err == nil || !strings.Contains(err.Error(), "no file named") {
		t.Errorf("sqlite: without a path: %v", err)
	}
	// A URL pgx cannot read, and a server that is not there: the message
	// names the store, never its password.
	for _, u := range []string{"postgres://sortie:hunter2@127.0.0.1:1/db?sslmode=maybe", "postgresql://sortie:hunter2@127.0.0.1:1/db?connect_timeout=2"} {
		_, err := OpenURL(ctx, u, nil)
		if err == nil {
			t.Fatalf("%s opened", u)
		}
		t.Log(err)
		if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "postgres") || !strings.Contains(err.Error(), "127.0.0.1:1/db") {
			t.Errorf("%s: %v", Redact(u), err)
		}
	}
	if got := Redact("postgres://sortie:hunter2@db:5432/sortie"); got != "postgres://sortie:xxxxx@db:5432/sortie" {
		t.Errorf("Redact: %s", got)
	}
}

// PostgreSQL's answers that mean "another writer is in the way" are told
// apart: a deadlock or serialization failure is run again, a lock wait
// past lock_timeout is ErrBusy.
func TestPostgresBusyErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t, postgresBackend)
	// Hold job 1's row in one transaction; a second waits past a short
	// lock_timeout.
	id, err := s.CreateJob(ctx, &Job{Name: "a", Spec: []byte(`{}`)}, []NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	holder, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if err := s.d.lockJob(ctx, holder, id); err != nil {
		t.Fatal(err)
	}
	err = s.tx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = 50`); err != nil {
			return err
		}
		return s.d.lockJob(ctx, tx, id)
	})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("a lock wait past lock_timeout: %v, want ErrBusy", err)
	}
	holder.Rollback()
	// A deadlock PostgreSQL broke is run again, and then goes through.
	tries := 0
	err = s.tx(ctx, func(tx *dbTx) error {
		tries++
		if tries == 1 {
			_, err := tx.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION 'deadlock' USING ERRCODE = '40P01'; END $$`)
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET status_reason = 'second try' WHERE id = ?`, id)
		return err
	})
	if err != nil || tries != 2 {
		t.Fatalf("after a deadlock: %v, %d tries, want success at the second", err, tries)
	}
	var reason string
	if err := s.db.QueryRowContext(ctx, `SELECT status_reason FROM jobs WHERE id = ?`, id).Scan(&reason); err != nil || reason != "second try" {
		t.Fatalf("status_reason %q %v", reason, err)
	}
	// One that never goes through is ErrBusy after maxTries.
	tries = 0
	err = s.tx(ctx, func(tx *dbTx) error {
		tries++
		_, err := tx.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION 'serialization' USING ERRCODE = '40001'; END $$`)
		return err
	})
	if !errors.Is(err, ErrBusy) || tries != maxTries {
		t.Fatalf("always aborted: %v after %d tries, want ErrBusy after %d", err, tries, maxTries)
	}
}

// A PostgreSQL writer waits BusyTimeout for a row lock, unless the URL
// says otherwise.
func TestPostgresLockTimeout(t *testing.T) {
	ctx := context.Background()
	u := postgresBackend.newStore(t)
	for _, c := range []struct{ url, want string }{{u, "15s"}, {u + "&lock_timeout=1234", "1234ms"}} {
		s, err := OpenURL(ctx, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = s.db.QueryRowContext(ctx, `SHOW lock_timeout`).Scan(&got)
		s.Close()
		if err != nil || got != c.want {
			t.Errorf("%s: lock_timeout %q (%v), want %q", Redact(c.url), got, err, c.want)
		}
	}
}
