package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sortie/strategy"
)

// The scopes of a quota, as `sortie server quotas set` names them.
const (
	QuotaServer  = "server"
	QuotaPerUser = "per_user"
	QuotaUser    = "user"
	QuotaGroup   = "group"
)

// Quota is a limit an admin set through the server (`sortie server
// quotas set`): it replaces config.yaml's entry of its scope.
type Quota struct {
	// Scope is QuotaServer, QuotaPerUser, QuotaUser or QuotaGroup; Name
	// is the user's or group's name, "" for the other two.
	Scope string
	Name  string
	// Limit is what the scope's jobs may hold at once; empty limits
	// nothing (the scope is not limited, whatever config.yaml says).
	Limit strategy.Amounts
	// Members are a group's users.
	Members []string
	SetAt   time.Time
	SetBy   string
}

// Key is "server", "per_user", "user alice" or "group ml": the scope as
// the actions log and messages name it.
func (q Quota) Key() string {
	if q.Name == "" {
		return q.Scope
	}
	return q.Scope + " " + q.Name
}

// SetQuota stores q (its SetAt is now), replacing the quota of its scope
// if there is one, and records it in the actions log (verb quota) as by's.
func (s *Store) SetQuota(ctx context.Context, q Quota, by string) (Quota, error) {
	if err := checkQuotaScope(q.Scope, q.Name); err != nil {
		return q, err
	}
	q.SetAt, q.SetBy = s.now().UTC().Truncate(time.Millisecond), by
	if q.Limit == nil {
		q.Limit = strategy.Amounts{}
	}
	members := ""
	if q.Scope == QuotaGroup {
		b, _ := json.Marshal(q.Members)
		members = string(b)
	}
	err := s.tx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO quotas (scope, name, amounts, members, set_at, set_by) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(scope, name) DO UPDATE SET amounts = excluded.amounts, members = excluded.members,
			set_at = excluded.set_at, set_by = excluded.set_by`,
			q.Scope, q.Name, FormatAsk(q.Limit), members, fmtTime(q.SetAt), by); err != nil {
			return err
		}
		detail := "set " + q.Key() + " " + FormatAsk(q.Limit)
		if q.Scope == QuotaGroup {
			detail += " members " + strings.Join(q.Members, ",")
		}
		return recordAction(ctx, tx, Action{At: q.SetAt, Actor: by, Verb: "quota", Detail: detail})
	})
	return q, err
}

// UnsetQuota removes the quota of scope and name, so that config.yaml's
// entry holds again, and records it in the actions log; ok is false when
// there was none (nothing is recorded then).
func (s *Store) UnsetQuota(ctx context.Context, scope, name, by string) (ok bool, err error) {
	if err := checkQuotaScope(scope, name); err != nil {
		return false, err
	}
	err = s.tx(ctx, func(tx *dbTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM quotas WHERE scope = ? AND name = ?`, scope, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		ok = true
		return recordAction(ctx, tx, Action{At: s.now(), Actor: by, Verb: "quota",
			Detail: "unset " + Quota{Scope: scope, Name: name}.Key()})
	})
	return ok, err
}

func checkQuotaScope(scope, name string) error {
	switch scope {
	case QuotaServer, QuotaPerUser:
		if name != "" {
			return fmt.Errorf("a %s quota has no name (%q)", scope, name)
		}
	case QuotaUser, QuotaGroup:
		if name == "" {
			return fmt.Errorf("a %s quota needs a name", scope)
		}
	default:
		return fmt.Errorf("quota scope %q: give server, per_user, user or group", scope)
	}
	return nil
}

// Quotas are the stored quotas: server, per_user, then users and groups,
// each by name.
func (s *Store) Quotas(ctx context.Context) ([]Quota, error) {
	return readQuotas(ctx, s.db)
}

func readQuotas(ctx context.Context, q querier) ([]Quota, error) {
	qs, err := queryAll(ctx, q, scanQuota, `SELECT scope, name, amounts, members, set_at, set_by FROM quotas`)
	if err != nil {
		return nil, fmt.Errorf("read the quotas: %w", err)
	}
	rank := map[string]int{QuotaServer: 0, QuotaPerUser: 1, QuotaUser: 2, QuotaGroup: 3}
	slices.SortFunc(qs, func(a, b Quota) int {
		if rank[a.Scope] != rank[b.Scope] {
			return rank[a.Scope] - rank[b.Scope]
		}
		return strings.Compare(a.Name, b.Name)
	})
	return qs, nil
}

func scanQuota(rows *sql.Rows) (Quota, error) {
	var q Quota
	var amounts, members, at string
	if err := rows.Scan(&q.Scope, &q.Name, &amounts, &members, &at, &q.SetBy); err != nil {
		return q, err
	}
	if err := json.Unmarshal([]byte(amounts), &q.Limit); err != nil {
		return q, fmt.Errorf("quota %s: amounts %q: %w", q.Key(), amounts, err)
	}
	if q.Limit == nil {
		q.Limit = strategy.Amounts{}
	}
	if members != "" {
		if err := json.Unmarshal([]byte(members), &q.Members); err != nil {
			return q, fmt.Errorf("quota %s: members %q: %w", q.Key(), members, err)
		}
	}
	if t := parseTime(sql.NullString{String: at, Valid: true}); t != nil {
		q.SetAt = *t
	}
	return q, nil
}

// ApplyQuotas is base (config.yaml's limits) with each quota replacing
// the entry of its scope: the limits admission and launches hold jobs to.
// Groups stay in name order.
func ApplyQuotas(base strategy.Limits, qs []Quota) strategy.Limits {
	if len(qs) == 0 {
		return base
	}
	out := strategy.Limits{Server: base.Server, DefaultUser: base.DefaultUser, Users: maps.Clone(base.Users),
		Groups: slices.Clone(base.Groups)}
	for _, q := range qs {
		limit := maps.Clone(q.Limit)
		if limit == nil {
			limit = strategy.Amounts{}
		}
		switch q.Scope {
		case QuotaServer:
			out.Server = limit
		case QuotaPerUser:
			out.DefaultUser = limit
		case QuotaUser:
			if out.Users == nil {
				out.Users = map[string]strategy.Amounts{}
			}
			out.Users[q.Name] = limit
		case QuotaGroup:
			g := strategy.Group{Name: q.Name, Members: q.Members, Limit: limit}
			if i := slices.IndexFunc(out.Groups, func(g strategy.Group) bool { return g.Name == q.Name }); i >= 0 {
				out.Groups[i] = g
			} else {
				out.Groups = append(out.Groups, g)
			}
		}
	}
	slices.SortFunc(out.Groups, func(a, b strategy.Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LimitsAny says whether l limits anything: without a limit every job
// starts when launched.
func LimitsAny(l strategy.Limits) bool {
	if len(l.Server) > 0 || len(l.DefaultUser) > 0 {
		return true
	}
	for _, u := range l.Users {
		if len(u) > 0 {
			return true
		}
	}
	for _, g := range l.Groups {
		if len(g.Limit) > 0 {
			return true
		}
	}
	return false
}

// HasQuotas says whether any quota is stored: a cheap look admission
// takes when config.yaml sets no limit.
func (s *Store) HasQuotas(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM quotas LIMIT 1) q`).Scan(&n)
	return n > 0, err
}
