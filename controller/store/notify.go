package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sortie/controller/lifecycle"
)

// The outbox of notifications. Every change of a job's status that a
// webhook can want is written to notify_events by a trigger, in the
// transaction that changes it (migration 0003), so no event is lost to a
// crash and none is made twice. The notifier dispatches each event into
// one delivery per webhook that wants it, and records each delivery's try
// before it sends and its outcome after.
//
// A webhook can want a job's events when the job's spec names notify (its
// tasks' own webhooks: jobs.notify, set when the job is stored) or when
// the controller has default webhooks (notify_defaults, which its notifier
// writes when it starts); the trigger writes nothing for a job with
// neither (migration 0011), as its events would go nowhere.

// NamesNotify says whether a stored spec names notify, which a spec with a
// task that has webhooks of its own does. A job whose spec does not has
// only the default webhooks.
func NamesNotify(spec []byte) bool { return bytes.Contains(spec, []byte(`"notify"`)) }

// SetDefaultWebhooks records whether there are default webhooks, the ones
// of every task without notify: without them, the changes of a job whose
// spec names no notify are not written to the outbox. It writes only when
// that changes what is recorded.
func (s *Store) SetDefaultWebhooks(ctx context.Context, on bool) error {
	was, err := s.DefaultWebhooks(ctx)
	if err != nil || was == on {
		return err
	}
	return s.exec(ctx, `UPDATE notify_defaults SET webhooks = ? WHERE id = 1`, boolInt(on))
}

// DefaultWebhooks says whether default webhooks are recorded (a store no
// notifier has started on says yes).
func (s *Store) DefaultWebhooks(ctx context.Context) (bool, error) {
	var on int
	err := s.db.QueryRowContext(ctx, `SELECT webhooks FROM notify_defaults WHERE id = 1`).Scan(&on)
	if err != nil {
		return false, fmt.Errorf("read notify_defaults: %w", err)
	}
	return on != 0, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// NotifyEvent is one change of a job's status.
type NotifyEvent struct {
	ID    int64
	JobID int64
	Task  int
	// Attempt is the task's newest attempt when the status changed; 0 if
	// it had none.
	Attempt   int
	From, To  lifecycle.Status
	Reason    string
	ExitCodes []*int
	At        time.Time
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // to be sent, at NextTryAt
	DeliverySending   = "sending"   // a try began and its outcome is not recorded
	DeliveryDelivered = "delivered" // the receiver answered 2xx
	DeliveryFailed    = "failed"    // given up
)

// Delivery is one event posted to one webhook.
type Delivery struct {
	ID     int64
	Event  NotifyEvent
	URL    string
	Kind   string // the event kind the webhook asked for: status, recovery, failed, succeeded
	Secret string // the signing key's name
	State  string
	// Tries counts the tries begun, the one in flight included.
	Tries      int
	NextTryAt  time.Time
	HTTPStatus int // of the last answer; 0 for none
	// LastError is why the last failed try failed (kept once a later try
	// delivers), or why the delivery was given up.
	LastError string
	CreatedAt time.Time
	SentAt    *time.Time
	DoneAt    *time.Time
}

// Key is d's idempotency key, sent with every try of d: the receiver
// drops a delivery it has seen by it.
func (d *Delivery) Key() string { return fmt.Sprintf("sortie-%d-%d", d.Event.ID, d.ID) }

// NewDelivery is a webhook an event is to be posted to.
type NewDelivery struct {
	URL, Kind, Secret string
}

// ErrDeliveryDone is wrapped by the error of a try of a delivery that was
// delivered or given up: it is never sent again.
var ErrDeliveryDone = errors.New("delivery already done")

// fixedTime writes times that compare as text in time order (next_try_at),
// which RFC 3339 with trimmed fractions does not.
func fixedTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// UndispatchedEvents returns up to limit events whose deliveries are not
// written yet, oldest first.
func (s *Store) UndispatchedEvents(ctx context.Context, limit int) ([]NotifyEvent, error) {
	return queryAll(ctx, s.db, func(rows *sql.Rows) (NotifyEvent, error) { return scanEvent(rows) },
		`SELECT id, job_id, task_idx, attempt, from_status, to_status, reason, exit_codes, at
		FROM notify_events WHERE dispatched = 0 ORDER BY id LIMIT ?`, limit)
}

type scanner interface{ Scan(dest ...any) error }

func scanEvent(r scanner, more ...any) (NotifyEvent, error) {
	var e NotifyEvent
	var attempt sql.NullInt64
	var codes sql.NullString
	var at string
	dest := append([]any{&e.ID, &e.JobID, &e.Task, &attempt, &e.From, &e.To, &e.Reason, &codes, &at}, more...)
	if err := r.Scan(dest...); err != nil {
		return e, err
	}
	e.Attempt = int(attempt.Int64)
	if codes.Valid && codes.String != "" {
		_ = json.Unmarshal([]byte(codes.String), &e.ExitCodes)
	}
	if t := parseTime(sql.NullString{String: at, Valid: true}); t != nil {
		e.At = *t
	}
	return e, nil
}

// Dispatch is an event and the webhooks it is to be posted to.
type Dispatch struct {
	Event      NotifyEvent
	Deliveries []NewDelivery
}

// DispatchEvents writes each event's deliveries, one per webhook, and
// marks it dispatched, all in one transaction; an event no webhook wants
// is dropped. Dispatching an event again writes nothing new.
func (s *Store) DispatchEvents(ctx context.Context, ds []Dispatch) error {
	if len(ds) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *dbTx) error {
		now := s.now()
		for _, d := range ds {
			e := d.Event
			if len(d.Deliveries) == 0 {
				if _, err := tx.ExecContext(ctx, `DELETE FROM notify_events WHERE id = ? AND dispatched = 0`, e.ID); err != nil {
					return err
				}
				continue
			}
			for _, nd := range d.Deliveries {
				if _, err := tx.ExecContext(ctx, `INSERT INTO notify_deliveries
					(event_id, job_id, url, event, secret, state, next_try_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
					ON CONFLICT DO NOTHING`,
					e.ID, e.JobID, nd.URL, nd.Kind, nd.Secret, DeliveryPending, fixedTime(now), fmtTime(now)); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE notify_events SET dispatched = 1 WHERE id = ?`, e.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

const deliveryColumns = `e.id, e.job_id, e.task_idx, e.attempt, e.from_status, e.to_status, e.reason, e.exit_codes, e.at,
	d.id, d.url, d.event, d.secret, d.state, d.tries, d.next_try_at, d.http_status, d.last_error, d.created_at, d.sent_at, d.done_at
	FROM notify_deliveries d JOIN notify_events e ON e.id = d.event_id`

func (s *Store) findDeliveries(ctx context.Context, tail string, args ...any) ([]*Delivery, error) {
	return queryAll(ctx, s.db, scanDelivery, `SELECT `+deliveryColumns+` `+tail, args...)
}

func scanDelivery(rows *sql.Rows) (*Delivery, error) {
	d := &Delivery{}
	var next, created string
	var status sql.NullInt64
	var sent, done sql.NullString
	e, err := scanEvent(rows, &d.ID, &d.URL, &d.Kind, &d.Secret, &d.State, &d.Tries, &next, &status, &d.LastError, &created, &sent, &done)
	if err != nil {
		return nil, err
	}
	d.Event = e
	d.HTTPStatus = int(status.Int64)
	if t, err := time.Parse(time.RFC3339Nano, next); err == nil {
		d.NextTryAt = t
	}
	if t := parseTime(sql.NullString{String: created, Valid: true}); t != nil {
		d.CreatedAt = *t
	}
	d.SentAt, d.DoneAt = parseTime(sent), parseTime(done)
	return d, nil
}

// DueDeliveries returns up to limit deliveries to try at now, the oldest
// first: those pending whose time has come, and those a try began for
// whose outcome was never recorded (the controller stopped in between).
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]*Delivery, error) {
	return s.findDeliveries(ctx, `WHERE d.state IN ('pending', 'sending') AND d.next_try_at <= ? ORDER BY d.next_try_at, d.id LIMIT ?`,
		fixedTime(now), limit)
}

// NextDeliveryAt is when the next pending delivery is due; nil when none is.
func (s *Store) NextDeliveryAt(ctx context.Context) (*time.Time, error) {
	var next sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT MIN(next_try_at) FROM notify_deliveries WHERE state IN ('pending', 'sending')`).Scan(&next)
	if err != nil || !next.Valid {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339Nano, next.String)
	if err != nil {
		return nil, fmt.Errorf("notify_deliveries.next_try_at %q: %w", next.String, err)
	}
	return &t, nil
}

// Deliveries returns a job's deliveries, in the order of its events.
func (s *Store) Deliveries(ctx context.Context, jobID int64) ([]*Delivery, error) {
	return s.findDeliveries(ctx, `WHERE d.job_id = ? ORDER BY d.event_id, d.id`, jobID)
}

// TryLease is how long a try may go unrecorded before the delivery is due
// again: a try ends within the notifier's request timeout, so one still
// "sending" after this was cut short (the controller was killed, or the
// store failed to record its outcome).
const TryLease = time.Minute

// BeginTry records that a try of delivery id begins, before anything is
// sent: a controller that stops before its outcome is recorded finds it
// "sending" and tries again with the same idempotency key. It returns the
// number of this try, and fails with ErrDeliveryDone for a delivery that
// was delivered or given up.
func (s *Store) BeginTry(ctx context.Context, id int64) (int, error) {
	var tries int
	err := s.tx(ctx, func(tx *dbTx) error {
		var state string
		// Locked on PostgreSQL: two notifiers beginning a try of one
		// delivery count two tries, one after the other.
		if err := tx.QueryRowContext(ctx, `SELECT state, tries FROM notify_deliveries WHERE id = ?`+s.d.forUpdate(), id).Scan(&state, &tries); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("delivery %d: %w", id, ErrNotFound)
			}
			return err
		}
		if state == DeliveryDelivered || state == DeliveryFailed {
			return fmt.Errorf("delivery %d is %s: %w", id, state, ErrDeliveryDone)
		}
		tries++
		now := s.now()
		_, err := tx.ExecContext(ctx, `UPDATE notify_deliveries SET state = ?, tries = ?, sent_at = ?, next_try_at = ? WHERE id = ?`,
			DeliverySending, tries, fmtTime(now), fixedTime(now.Add(TryLease)), id)
		return err
	})
	return tries, err
}

// TryOutcome is how a try of a delivery ended.
type TryOutcome struct {
	// State is DeliveryDelivered, DeliveryPending (try again at NextTryAt)
	// or DeliveryFailed (given up).
	State      string
	HTTPStatus int
	Error      string
	NextTryAt  time.Time
}

// EndTry records how the try of delivery id that BeginTry began ended.
func (s *Store) EndTry(ctx context.Context, id int64, o TryOutcome) error {
	var done, next any
	switch o.State {
	case DeliveryDelivered, DeliveryFailed:
		done = fmtTime(s.now())
		next = fixedTime(s.now())
	case DeliveryPending:
		next = fixedTime(o.NextTryAt)
	default:
		return fmt.Errorf("delivery %d: a try cannot end %q", id, o.State)
	}
	var status any
	if o.HTTPStatus > 0 {
		status = o.HTTPStatus
	}
	// A try that succeeds keeps the error of the one before it: how the
	// delivery went stays on record.
	return s.exec(ctx, `UPDATE notify_deliveries SET state = ?, http_status = COALESCE(?, http_status),
		last_error = CASE WHEN ? = '' THEN last_error ELSE ? END, next_try_at = ?, done_at = ?
		WHERE id = ? AND state = ?`, o.State, status, o.Error, o.Error, next, done, id, DeliverySending)
}
