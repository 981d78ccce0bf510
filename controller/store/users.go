package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// User is one user of a shared server. Only the SHA-256 of its token is
// kept (TokenHash, hex).
type User struct {
	Name      string
	TokenHash string
	Admin     bool
	CreatedAt time.Time
	// RevokedAt is when the token was revoked; nil while it opens the API.
	RevokedAt *time.Time
}

// ErrUserExists is returned when a user name is already taken.
var ErrUserExists = errors.New("user exists")

// AddUser stores a new user with the hash of its token.
func (s *Store) AddUser(ctx context.Context, name, tokenHash string, admin bool) error {
	err := s.tx(ctx, func(tx *dbTx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("user %q: %w", name, ErrUserExists)
		}
		flag := 0
		if admin {
			flag = 1
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO users (name, token_hash, admin, created_at) VALUES (?, ?, ?, ?)`,
			name, tokenHash, flag, fmtTime(s.now()))
		return err
	})
	return err
}

// Users lists every user, revoked ones too, by name.
func (s *Store) Users(ctx context.Context) ([]*User, error) {
	return s.findUsers(ctx, `ORDER BY name`)
}

// UserByTokenHash returns the user whose token hashes to hash, revoked or
// not; ErrNotFound when none.
func (s *Store) UserByTokenHash(ctx context.Context, hash string) (*User, error) {
	us, err := s.findUsers(ctx, `WHERE token_hash = ?`, hash)
	if err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, ErrNotFound
	}
	return us[0], nil
}

// RevokeUser revokes name's token: it opens nothing from now on. A user
// already revoked keeps the first revocation's time.
func (s *Store) RevokeUser(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET revoked_at = COALESCE(revoked_at, ?) WHERE name = ?`, fmtTime(s.now()), name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("user %q: %w", name, ErrNotFound)
		}
		return nil
	})
}

func (s *Store) findUsers(ctx context.Context, tail string, args ...any) ([]*User, error) {
	return queryAll(ctx, s.db, scanUser, `SELECT name, token_hash, admin, created_at, revoked_at FROM users `+tail, args...)
}

func scanUser(rows *sql.Rows) (*User, error) {
	var u User
	var created string
	var revoked sql.NullString
	var admin int64
	if err := rows.Scan(&u.Name, &u.TokenHash, &admin, &created, &revoked); err != nil {
		return nil, err
	}
	u.Admin = admin != 0
	if t := parseTime(sql.NullString{String: created, Valid: true}); t != nil {
		u.CreatedAt = *t
	}
	u.RevokedAt = parseTime(revoked)
	return &u, nil
}

// Action is one cancel, retry or forget, with who asked.
type Action struct {
	At    time.Time
	Actor string
	// Verb is cancel, retry or forget.
	Verb string
	// JobID is the job acted on: the cancelled job, the retried one, the
	// forgotten failure's job; 0 for a forget of every failure.
	JobID  int64
	Detail string
}

func recordAction(ctx context.Context, tx *dbTx, a Action) error {
	var job any
	if a.JobID != 0 {
		job = a.JobID
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO actions (at, actor, verb, job_id, detail) VALUES (?, ?, ?, ?, ?)`,
		fmtTime(a.At), a.Actor, a.Verb, job, a.Detail)
	return err
}

// Actions lists the actions on job id, oldest first; id 0 lists every
// action.
func (s *Store) Actions(ctx context.Context, id int64) ([]Action, error) {
	q, args := `SELECT at, actor, verb, COALESCE(job_id, 0), detail FROM actions`, []any{}
	if id != 0 {
		q += ` WHERE job_id = ?`
		args = append(args, id)
	}
	return queryAll(ctx, s.db, scanAction, q+` ORDER BY id`, args...)
}

func scanAction(rows *sql.Rows) (Action, error) {
	var a Action
	var at string
	if err := rows.Scan(&at, &a.Actor, &a.Verb, &a.JobID, &a.Detail); err != nil {
		return Action{}, err
	}
	if t := parseTime(sql.NullString{String: at, Valid: true}); t != nil {
		a.At = *t
	}
	return a, nil
}

// ValidUserName says whether name can be a user's name: letters, digits,
// '.', '_' and '-', 1 to 64 of them, starting with a letter or digit.
func ValidUserName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("user name %q: give 1 to 64 characters", name)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && strings.ContainsRune("._-", c)
		if !ok {
			return fmt.Errorf("user name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}
