package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// The store's SQL is written once, for both databases: ? placeholders,
// INSERT ... ON CONFLICT, INSERT ... RETURNING id, times as RFC 3339 text.
// A dialect holds the few places where SQLite and PostgreSQL differ, and
// every statement goes through db or dbTx below, which rewrite it for the
// database they talk to.

type dialect struct {
	postgres bool
	// rebound caches each statement's PostgreSQL text ($1, $2, ...) by its
	// written text; cached is how many it holds, capped at maxRebound (the
	// IN lists of a filter make a few texts per length).
	rebound sync.Map
	cached  atomic.Int64
}

const maxRebound = 4096

// rebind returns q for the dialect's database: PostgreSQL numbers its
// placeholders.
func (d *dialect) rebind(q string) string {
	if !d.postgres {
		return q
	}
	if r, ok := d.rebound.Load(q); ok {
		return r.(string)
	}
	r := numberPlaceholders(q)
	if d.cached.Load() < maxRebound {
		if _, loaded := d.rebound.LoadOrStore(q, r); !loaded {
			d.cached.Add(1)
		}
	}
	return r
}

// numberPlaceholders turns each ? of q that is not inside a string
// literal, a quoted identifier, a comment or a dollar-quoted string into
// $1, $2, ... in order.
func numberPlaceholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i++
			continue
		case c == '\'' || c == '"':
			// Up to the closing quote; a doubled quote is part of the text.
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(q))
			b.WriteString(q[i:j])
			i = j
			continue
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
			continue
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
			continue
		case c == '$':
			if tag, ok := dollarTag(q[i:]); ok {
				j := strings.Index(q[i+len(tag):], tag)
				end := len(q)
				if j >= 0 {
					end = i + len(tag) + j + len(tag)
				}
				b.WriteString(q[i:end])
				i = end
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// dollarTag returns the $tag$ that opens a dollar-quoted string at the
// start of s, if one does.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || j > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

// lockJob makes the transaction the only writer of job id's rows until it
// ends. SQLite has one writer at a time already (every write transaction
// takes the write lock at BEGIN); on PostgreSQL, under READ COMMITTED,
// the row lock makes every later statement of the transaction read the
// job, its tasks and its attempts as the last writer left them, and keeps
// any other writer of them waiting: a status is read and moved as one
// step, as on SQLite.
func (d *dialect) lockJob(ctx context.Context, tx *dbTx, id int64) error {
	if !d.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT id FROM jobs WHERE id = ? FOR UPDATE`, id)
	return err
}

// lockAttemptJob is lockJob for the job of attempt id.
func (d *dialect) lockAttemptJob(ctx context.Context, tx *dbTx, id int64) error {
	if !d.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT j.id FROM jobs j JOIN attempts a ON a.job_id = j.id WHERE a.id = ? FOR UPDATE OF j`, id)
	return err
}

// forUpdate is the clause that locks the rows a SELECT reads, where the
// database needs one (see lockJob).
func (d *dialect) forUpdate() string {
	if d.postgres {
		return " FOR UPDATE"
	}
	return ""
}

// globSQL is the condition that col matches a shell pattern, written as
// SQLite's GLOB reads it (* ? [...] [^...], case sensitive, no escape
// character), and the argument it takes.
func (d *dialect) globSQL(col, pattern string) (string, any) {
	if !d.postgres {
		return col + " GLOB ?", pattern
	}
	return col + " ~ ?", globRegexp(pattern)
}

// globRegexp is the PostgreSQL regular expression that matches what
// SQLite's GLOB matches for pattern.
func globRegexp(pattern string) string {
	p := []rune(pattern)
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			// A set runs to the first ] after its first member (a ] there
			// is a member); GLOB matches nothing with a set left open.
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				j++
			}
			if j >= len(p) {
				return neverMatches
			}
			b.WriteString(bracket(p[i+1 : j]))
			i = j
		default:
			if strings.ContainsRune(`\^$.|+()[]{}*?`, c) {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
	}
	b.WriteString("$")
	return b.String()
}

// neverMatches is a regular expression no text matches.
const neverMatches = "^$.^"

// bracket writes a GLOB set (what is between [ and ]) as a regular
// expression's bracket expression, each member escaped.
func bracket(set []rune) string {
	var b strings.Builder
	b.WriteByte('[')
	if len(set) > 0 && set[0] == '^' {
		b.WriteByte('^')
		set = set[1:]
	}
	for i, c := range set {
		switch {
		case c == '-' && i > 0 && i < len(set)-1:
			b.WriteByte('-') // a range
		case c == '\\' || c == ']' || c == '[' || c == '^' || c == '-':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// retryable says whether a transaction that failed with err may be run
// again as it is: PostgreSQL aborted it to keep transactions apart (a
// serialization failure, a deadlock).
func (d *dialect) retryable(err error) bool {
	if !d.postgres {
		return false
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// busy says whether err is the database's "another writer holds what this
// one needs, and it waited its time": SQLite's busy and locked, and
// PostgreSQL's lock_timeout (55P03).
func (d *dialect) busy(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// noTable says whether err is the database's "no such table".
func (d *dialect) noTable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42P01"
	}
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// rebound runs statements on a *sql.DB or a *sql.Tx, rebound for the
// dialect.
type rebound[T interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}] struct {
	c T
	d *dialect
}

func (r rebound[T]) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.c.QueryContext(ctx, r.d.rebind(q), args...)
}

func (r rebound[T]) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return r.c.QueryRowContext(ctx, r.d.rebind(q), args...)
}

func (r rebound[T]) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return r.c.ExecContext(ctx, r.d.rebind(q), args...)
}

// db is the store's *sql.DB, its statements rebound for the dialect.
type db struct{ rebound[*sql.DB] }

// BeginTx begins a transaction; opts nil keeps the database's defaults.
func (db *db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*dbTx, error) {
	tx, err := db.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &dbTx{rebound[*sql.Tx]{tx, db.d}}, nil
}

func (db *db) Close() error { return db.c.Close() }

// dbTx is one transaction, its statements rebound for the dialect.
type dbTx struct{ rebound[*sql.Tx] }

// execScript runs a migration's text as it is written: several
// statements, no arguments, nothing to rebind.
func (t *dbTx) execScript(ctx context.Context, script string) error {
	_, err := t.c.ExecContext(ctx, script)
	return err
}

func (t *dbTx) Commit() error   { return t.c.Commit() }
func (t *dbTx) Rollback() error { return t.c.Rollback() }

// insertID runs an INSERT with RETURNING id (both databases have it) and
// returns the new row's id.
func insertID(ctx context.Context, tx *dbTx, q string, args ...any) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, q+" RETURNING id", args...).Scan(&id)
	return id, err
}
