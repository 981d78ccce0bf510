package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"sortie/strategy"
)

// AdmissionFacts are what admission decides on, read from the store in
// the transaction that writes its decision.
type AdmissionFacts struct {
	// Waiting are the PENDING jobs not yet admitted, nor being cancelled.
	Waiting []strategy.WaitingJob
	// Held is what each owner's admitted, unfinished jobs hold: every job
	// that left PENDING, and those admitted that have not yet.
	Held map[string]strategy.Amounts
	// Used are the attempts that ran since UsedSince, with their job's
	// owner and what it holds.
	Used []strategy.UseSpan
	// Quotas are the limits set through the server, which replace
	// config.yaml's entries of their scopes (ApplyQuotas).
	Quotas []Quota
}

// Admission is one pass of admission's decision: the jobs it let start.
type Admission struct {
	Admitted []int64
	// Waiting is how many jobs still wait.
	Waiting int
}

// admissionLock is the key of the PostgreSQL advisory lock admission
// passes take: one pass at a time across every replica of a store.
const admissionLock = 0x736f7274_69650022

// Admit runs one admission pass in one transaction: it reads the facts,
// calls decide with them, marks the jobs decide admits as admitted and
// writes every waiting job's reason and place (only those that changed).
// Passes of every replica sharing a PostgreSQL store run one at a time
// (an advisory lock held to the end of the transaction), and on SQLite
// every write transaction is alone already: what one pass admits, the
// next counts as held, so no two passes give the same room twice.
// usedSince bounds the attempts read for past use.
func (s *Store) Admit(ctx context.Context, usedSince time.Time, decide func(AdmissionFacts) []strategy.Placed) (Admission, error) {
	var out Admission
	err := s.tx(ctx, func(tx *dbTx) error {
		out = Admission{}
		if s.d.postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(admissionLock)); err != nil {
				return fmt.Errorf("take the admission lock: %w", err)
			}
		}
		facts, current, err := readAdmissionFacts(ctx, tx, usedSince)
		if err != nil {
			return err
		}
		now := fmtTime(s.now())
		for _, p := range decide(facts) {
			if p.Admit {
				if _, err := tx.ExecContext(ctx, `UPDATE jobs SET admitted_at = ?, wait_reason = '', wait_place = NULL
					WHERE id = ? AND status = 'PENDING' AND admitted_at IS NULL`, now, p.ID); err != nil {
					return err
				}
				out.Admitted = append(out.Admitted, p.ID)
				continue
			}
			out.Waiting++
			if c, ok := current[p.ID]; ok && c.reason == p.Reason && c.place == p.Place {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET wait_reason = ?, wait_place = ? WHERE id = ? AND admitted_at IS NULL`,
				p.Reason, p.Place, p.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// AdmissionFacts reads, in one transaction, what an admission pass would
// decide on (the waiting jobs, what each owner holds, the use since
// usedSince) and changes nothing: what `sortie server usage` shows.
func (s *Store) AdmissionFacts(ctx context.Context, usedSince time.Time) (AdmissionFacts, error) {
	var out AdmissionFacts
	err := s.tx(ctx, func(tx *dbTx) error {
		facts, _, err := readAdmissionFacts(ctx, tx, usedSince)
		out = facts
		return err
	})
	return out, err
}

// waitShown is what a waiting job's row says of its wait now.
type waitShown struct {
	reason string
	place  int
}

func readAdmissionFacts(ctx context.Context, tx *dbTx, usedSince time.Time) (AdmissionFacts, map[int64]waitShown, error) {
	facts := AdmissionFacts{Held: map[string]strategy.Amounts{}}
	current := map[int64]waitShown{}
	rows, err := tx.QueryContext(ctx, `SELECT id, owner, priority, submitted_at, ask, wait_reason, wait_place FROM jobs
		WHERE status = 'PENDING' AND admitted_at IS NULL AND cancel_requested = 0`)
	if err != nil {
		return facts, nil, err
	}
	for rows.Next() {
		var w strategy.WaitingJob
		var submitted, ask, reason string
		var place sql.NullInt64
		if err := rows.Scan(&w.ID, &w.User, &w.Priority, &submitted, &ask, &reason, &place); err != nil {
			rows.Close()
			return facts, nil, err
		}
		if t := parseTime(sql.NullString{String: submitted, Valid: true}); t != nil {
			w.SubmittedAt = *t
		}
		if w.Ask, err = ParseAsk(ask); err != nil {
			rows.Close()
			return facts, nil, fmt.Errorf("job %d: %w", w.ID, err)
		}
		facts.Waiting = append(facts.Waiting, w)
		current[w.ID] = waitShown{reason: reason, place: int(place.Int64)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return facts, nil, err
	}

	rows, err = tx.QueryContext(ctx, `SELECT id, owner, ask, cost_rate FROM jobs
		WHERE `+activeSQL+` AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`)
	if err != nil {
		return facts, nil, err
	}
	for rows.Next() {
		var id int64
		var owner, ask string
		var rate sql.NullFloat64
		if err := rows.Scan(&id, &owner, &ask, &rate); err != nil {
			rows.Close()
			return facts, nil, err
		}
		a, err := ParseAsk(ask)
		if err != nil {
			rows.Close()
			return facts, nil, fmt.Errorf("job %d: %w", id, err)
		}
		if rate.Valid {
			// A job whose attempt bills holds what it costs an hour
			// (its recorded price, every node), not the estimate it
			// asked for at launch.
			a[strategy.HourlyCost] = strategy.Cents(rate.Float64)
		}
		if facts.Held[owner] == nil {
			facts.Held[owner] = strategy.Amounts{}
		}
		for r, n := range a {
			facts.Held[owner][r] += n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return facts, nil, err
	}

	rows, err = tx.QueryContext(ctx, `SELECT j.owner, j.ask, a.started_at, a.ended_at FROM attempts a JOIN jobs j ON j.id = a.job_id
		WHERE a.ended_at IS NULL OR a.ended_at >= ?`, fmtTime(usedSince))
	if err != nil {
		return facts, nil, err
	}
	for rows.Next() {
		var owner, ask, started string
		var ended sql.NullString
		if err := rows.Scan(&owner, &ask, &started, &ended); err != nil {
			rows.Close()
			return facts, nil, err
		}
		a, _ := ParseAsk(ask) // a bad ask was refused above, or ended long ago
		span := strategy.UseSpan{User: owner, Charge: a.Charge(), End: parseTime(ended)}
		if t := parseTime(sql.NullString{String: started, Valid: true}); t != nil {
			span.Start = *t
		}
		facts.Used = append(facts.Used, span)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return facts, nil, err
	}
	if facts.Quotas, err = readQuotas(ctx, tx); err != nil {
		return facts, nil, err
	}
	return facts, current, nil
}

// ParseAsk reads a job's stored ask (FormatAsk); ” is one job on one
// node, what a job stored before asks were kept holds.
func ParseAsk(s string) (strategy.Amounts, error) {
	if s == "" {
		return strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 1}, nil
	}
	var a strategy.Amounts
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("ask %q: %w", s, err)
	}
	return a, nil
}

// FormatAsk is the JSON the store keeps of what a job holds.
func FormatAsk(a strategy.Amounts) string {
	b, _ := json.Marshal(a)
	return string(b)
}

// SetPriority changes a waiting job's priority; a job that was admitted
// or ended keeps its own (ErrNotWaiting).
func (s *Store) SetPriority(ctx context.Context, id int64, priority int, by string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, id); err != nil {
			return err
		}
		j, err := findJob(ctx, tx, id)
		if err != nil {
			return err
		}
		if j.Status != "PENDING" || j.AdmittedAt != nil {
			return fmt.Errorf("job %d is %s: %w", id, j.Status, ErrNotWaiting)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET priority = ? WHERE id = ?`, priority, id); err != nil {
			return err
		}
		return recordAction(ctx, tx, Action{At: s.now(), Actor: by, Verb: "priority", JobID: id,
			Detail: fmt.Sprintf("%d -> %d", j.Priority, priority)})
	})
}

// ErrNotWaiting is returned when a change meant for a waiting job names
// one that started or ended.
var ErrNotWaiting = fmt.Errorf("only a job waiting to start can change its priority")
