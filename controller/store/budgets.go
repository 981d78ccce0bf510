package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Budget is a user's own monthly budget, as `sortie server users budget`
// set it: Monthly nil is no budget, whatever config.yaml's default.
type Budget struct {
	Name    string
	Monthly *float64
	SetAt   time.Time
	SetBy   string
}

// SetBudget sets user name's monthly budget in dollars (nil: none, even
// when config.yaml has a default). ErrNotFound when there is no such user.
func (s *Store) SetBudget(ctx context.Context, name string, monthly *float64, by string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := userExists(ctx, tx, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO user_budgets (name, monthly, set_at, set_by) VALUES (?, ?, ?, ?)
			ON CONFLICT(name) DO UPDATE SET monthly = excluded.monthly, set_at = excluded.set_at, set_by = excluded.set_by`,
			name, monthly, fmtTime(s.now()), by)
		return err
	})
}

// ClearBudget drops user name's own budget: config.yaml's default holds
// for them again. ErrNotFound when there is no such user.
func (s *Store) ClearBudget(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := userExists(ctx, tx, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM user_budgets WHERE name = ?`, name)
		return err
	})
}

func userExists(ctx context.Context, tx *dbTx, name string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	return nil
}

// Budgets returns the users' own budgets by name.
func (s *Store) Budgets(ctx context.Context) (map[string]Budget, error) {
	bs, err := queryAll(ctx, s.db, scanBudget, `SELECT name, monthly, set_at, set_by FROM user_budgets`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Budget, len(bs))
	for _, b := range bs {
		out[b.Name] = b
	}
	return out, nil
}

// UserBudget returns name's own budget; ok is false when they have none
// of their own.
func (s *Store) UserBudget(ctx context.Context, name string) (b Budget, ok bool, err error) {
	bs, err := queryAll(ctx, s.db, scanBudget, `SELECT name, monthly, set_at, set_by FROM user_budgets WHERE name = ?`, name)
	if err != nil || len(bs) == 0 {
		return Budget{}, false, err
	}
	return bs[0], true, nil
}

// MonthlyBudget is owner's monthly budget in dollars: their own (`sortie
// server users budget`), else def (config.yaml's budgets.monthly); nil is
// none.
func (s *Store) MonthlyBudget(ctx context.Context, owner string, def *float64) (*float64, error) {
	b, ok, err := s.UserBudget(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("read %s's budget: %w", owner, err)
	}
	if ok {
		return b.Monthly, nil
	}
	return def, nil
}

func scanBudget(rows *sql.Rows) (Budget, error) {
	var b Budget
	var monthly sql.NullFloat64
	var at string
	if err := rows.Scan(&b.Name, &monthly, &at, &b.SetBy); err != nil {
		return b, err
	}
	if monthly.Valid {
		b.Monthly = &monthly.Float64
	}
	if t := parseTime(sql.NullString{String: at, Valid: true}); t != nil {
		b.SetAt = *t
	}
	return b, nil
}

// MonthStart is the start of now's calendar month, UTC: budgets count from
// it.
func MonthStart(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Spent returns what each owner's jobs have cost since since, by owner:
// the stored costs of the attempts that ended since then, and what each
// running attempt has cost since then at its job's rate (cost_rate), up to
// now. An attempt whose price was not known adds nothing and makes the sum
// an estimate, as does a running attempt. owner "" asks for every owner.
func (s *Store) Spent(ctx context.Context, owner string, since, now time.Time) (map[string]Cost, error) {
	out := map[string]Cost{}
	type row struct {
		owner    string
		dollars  float64
		estimate bool
	}
	where, args := "", []any{fmtTime(since)}
	if owner != "" {
		where, args = " AND j.owner = ?", append(args, owner)
	}
	ended, err := queryAll(ctx, s.db, func(rows *sql.Rows) (row, error) {
		var r row
		var sum sql.NullFloat64
		var est, unknown int
		if err := rows.Scan(&r.owner, &sum, &est, &unknown); err != nil {
			return r, err
		}
		r.dollars, r.estimate = sum.Float64, est != 0 || unknown != 0
		return r, nil
	}, `SELECT j.owner, SUM(a.cost), MAX(a.cost_estimate),
			MAX(CASE WHEN a.cost IS NULL AND a.billed_from IS NOT NULL THEN 1 ELSE 0 END)
		FROM jobs j JOIN attempts a ON a.job_id = j.id
		WHERE a.ended_at >= ?`+where+` GROUP BY j.owner`, args...)
	if err != nil {
		return nil, fmt.Errorf("read what attempts cost: %w", err)
	}
	for _, r := range ended {
		out[r.owner] = Cost{Dollars: r.dollars, Estimate: r.estimate}
	}
	where, args = "", nil
	if owner != "" {
		where, args = " AND owner = ?", []any{owner}
	}
	running, err := queryAll(ctx, s.db, func(rows *sql.Rows) (row, error) {
		var r row
		var rate sql.NullFloat64
		var from sql.NullString
		if err := rows.Scan(&r.owner, &rate, &from); err != nil {
			return r, err
		}
		r.estimate = true
		if t := parseTime(from); t != nil && rate.Valid {
			start := *t
			if start.Before(since) {
				start = since
			}
			if now.After(start) {
				r.dollars = rate.Float64 * now.Sub(start).Hours()
			}
		}
		return r, nil
	}, `SELECT owner, cost_rate, cost_since FROM jobs WHERE cost_since IS NOT NULL`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read what running attempts cost: %w", err)
	}
	for _, r := range running {
		c := out[r.owner]
		out[r.owner] = Cost{Dollars: c.Dollars + r.dollars, Estimate: true}
	}
	return out, nil
}
