package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"sortie/controller/lifecycle"
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
	// Admitted are those jobs one by one (strategy.HeldBy of them is
	// Held), with their priority, when they were admitted (submitted, for
	// a job started before admission existed) and the job each was asked
	// to make room for.
	Admitted []strategy.AdmittedJob
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
	// Preempted are the jobs it asked to yield their place, by the
	// waiting job each makes room for.
	Preempted map[int64]int64
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
// next counts as held, so no two passes give the same room twice. The
// jobs a waiting job preempts (Placed.Preempt) are asked to yield in the
// same transaction (yield_for, yield_reason): a job already asked, ended,
// or back waiting is left as it is.
// usedSince bounds the attempts read for past use.
//
// On PostgreSQL the transaction is read committed whatever the database's
// default_transaction_isolation: each statement after the lock then sees
// what the pass before committed. At repeatable read the view would be
// taken by the statement that waits for the lock, before the pass ahead
// committed, and two passes could give the same room to different jobs.
func (s *Store) Admit(ctx context.Context, usedSince time.Time, decide func(AdmissionFacts) []strategy.Placed) (Admission, error) {
	var out Admission
	var opts *sql.TxOptions
	if s.d.postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	err := s.txWith(ctx, opts, func(tx *dbTx) error {
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
		priority := make(map[int64]int, len(facts.Waiting))
		for _, w := range facts.Waiting {
			priority[w.ID] = w.Priority
		}
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
			for _, v := range p.Preempt {
				reason := fmt.Sprintf("preempted by priority: job %d (priority %d) takes its place", p.ID, priority[p.ID])
				if _, under, ok := strings.Cut(p.Reason, " for room under "); ok {
					reason += " under " + under
				}
				res, err := tx.ExecContext(ctx, `UPDATE jobs SET yield_for = ?, yield_reason = ?
					WHERE id = ? AND yield_for IS NULL AND `+activeSQL+` AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`, p.ID, reason, v)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n > 0 {
					if out.Preempted == nil {
						out.Preempted = map[int64]int64{}
					}
					out.Preempted[v] = p.ID
				}
			}
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

// Requeue sends job id, asked to yield its place (yield_for) and with no
// attempt open, back to wait for admission: PENDING, not admitted, with
// reason (lifecycle.Requeued). A job with an attempt open goes back
// through that attempt's end instead (EndAttempt with a requeue). It fails
// with ErrOpenAttempt while an attempt is open, with ErrTerminal if the
// job has ended, with ErrCancelRequested if it is being cancelled, and
// with ErrNotAMove for a move the lifecycle does not list; then nothing
// is written.
func (s *Store) Requeue(ctx context.Context, id int64, reason string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, id); err != nil {
			return err
		}
		open, err := openAttempt(ctx, tx, id)
		if err != nil {
			return err
		}
		j, err := readJob(ctx, tx, id)
		if err != nil {
			return err
		}
		var current int
		if err := tx.QueryRowContext(ctx, `SELECT current_task FROM jobs WHERE id = ?`, id).Scan(&current); err != nil {
			return err
		}
		t, err := readTask(ctx, tx, id, current)
		if err != nil {
			return err
		}
		n, err := lifecycle.Requeued(j.Job, open, t, reason)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ? WHERE job_id = ? AND idx = ?`, n.Task, id, current); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, next_action_at = NULL, `+requeueSQL+` WHERE id = ?`,
			n.Job, n.StatusReason, id)
		return err
	})
}

// requeueSQL is what a job going back to wait for admission clears: it is
// no longer admitted, nor asked to yield.
const requeueSQL = `admitted_at = NULL, wait_reason = '', wait_place = NULL, yield_for = NULL, yield_reason = ''`

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
	// Most jobs ask alike: each stored ask is read once, and the jobs
	// asking it share what it reads to (nobody changes a job's Ask).
	asks := map[string]strategy.Amounts{}
	parse := func(s string) (strategy.Amounts, error) {
		if a, ok := asks[s]; ok {
			return a, nil
		}
		a, err := ParseAsk(s)
		if err == nil {
			asks[s] = a
		}
		return a, err
	}
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
		if w.Ask, err = parse(ask); err != nil {
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

	rows, err = tx.QueryContext(ctx, `SELECT id, owner, ask, priority, COALESCE(admitted_at, submitted_at), yield_for, cancel_requested, cost_rate FROM jobs
		WHERE `+activeSQL+` AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`)
	if err != nil {
		return facts, nil, err
	}
	for rows.Next() {
		var a strategy.AdmittedJob
		var ask, admitted string
		var yieldFor sql.NullInt64
		var rate sql.NullFloat64
		if err := rows.Scan(&a.ID, &a.User, &ask, &a.Priority, &admitted, &yieldFor, &a.Cancelling, &rate); err != nil {
			rows.Close()
			return facts, nil, err
		}
		if a.Ask, err = parse(ask); err != nil {
			rows.Close()
			return facts, nil, fmt.Errorf("job %d: %w", a.ID, err)
		}
		if rate.Valid {
			// A job whose attempt bills holds what it costs an hour
			// (its recorded price, every node), not the estimate it
			// asked for at launch; its own copy, as parsed asks are
			// shared.
			a.Ask = maps.Clone(a.Ask)
			a.Ask[strategy.HourlyCost] = strategy.Cents(rate.Float64)
		}
		if t := parseTime(sql.NullString{String: admitted, Valid: true}); t != nil {
			a.AdmittedAt = *t
		}
		a.YieldFor = yieldFor.Int64
		facts.Admitted = append(facts.Admitted, a)
	}
	facts.Held = strategy.HeldBy(facts.Admitted)
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
		a, _ := parse(ask) // a bad ask was refused above, or ended long ago
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
