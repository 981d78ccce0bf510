// Package notify posts a job's events to the webhooks its task (or
// config.yaml) names. It works from the store's outbox: every change of a
// job's status is an event there, written in the transaction that made it
// (only for jobs a webhook can want: see Notifier.Start);
// the Notifier turns each into one delivery per webhook that wants it and
// sends those, recording each try before it sends and its outcome after,
// so that a controller stopped at any moment neither loses an event nor
// sends again one that was recorded delivered. It runs beside the
// reconcile loop and never holds it up: a slow or dead receiver costs its
// own goroutines, a bounded number of them.
//
// It must not import controller/service, sortie/cmd/..., sortie/provision/...
// or the AWS and Google Cloud SDKs: notifications read the store's outbox and
// nothing of the clouds.
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
)

// Notifier sends the outbox's deliveries.
type Notifier struct {
	Store *store.Store
	// Default are the webhooks of tasks without notify (config.yaml
	// notify.webhooks); Secrets the signing keys by name (notify.secrets).
	Default []schema.Webhook
	Secrets map[string]string
	// Clouds are the clouds a stored task may name (the registry's), to
	// read a job's spec with.
	Clouds schema.Clouds
	// Client sends the POSTs; nil is a client with RequestTimeout that
	// follows no redirect.
	Client *http.Client
	Log    *slog.Logger
	// Now is the clock; After waits between rounds (nil: time.After).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Retry is the wait before each try after the first: Initial, doubled
	// each time, at most Max; MaxTries bounds the tries of one delivery.
	Retry    Retry
	MaxTries int
	// Poll is the longest wait between looks at the outbox (default 1s).
	Poll time.Duration
	// Senders bounds the POSTs in flight, Batch the deliveries one round
	// takes (defaults 4 and 64).
	Senders, Batch int

	wake    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	cache   map[int64]*jobHooks // by job id
	started bool                // Start recorded Default in the store
}

// Retry is a capped doubling back-off.
type Retry struct {
	Initial, Max time.Duration
}

// Defaults of a Notifier's knobs.
const (
	DefaultMaxTries = 24
	RequestTimeout  = 10 * time.Second
)

// DefaultRetry waits 2s, 4s, 8s ... up to 5m between tries: 24 tries span
// about an hour and a half, the time a receiver's redeploy or outage takes.
func DefaultRetry() Retry { return Retry{Initial: 2 * time.Second, Max: 5 * time.Minute} }

// wait is the back-off before try n+1, after n tries failed.
func (r Retry) wait(n int) time.Duration {
	d := r.Initial
	for i := 1; i < n && d < r.Max; i++ {
		d *= 2
	}
	return min(d, r.Max)
}

func (n *Notifier) init() {
	n.once.Do(func() {
		n.wake = make(chan struct{}, 1)
		n.cache = map[int64]*jobHooks{}
		if n.Log == nil {
			n.Log = slog.New(slog.DiscardHandler)
		}
		if n.Now == nil {
			n.Now = time.Now
		}
		if n.After == nil {
			n.After = time.After
		}
		if n.Retry.Initial <= 0 {
			n.Retry = DefaultRetry()
		}
		if n.MaxTries <= 0 {
			n.MaxTries = DefaultMaxTries
		}
		if n.Poll <= 0 {
			n.Poll = time.Second
		}
		if n.Senders <= 0 {
			n.Senders = 4
		}
		if n.Batch <= 0 {
			n.Batch = 64
		}
		if n.Client == nil {
			n.Client = &http.Client{
				Timeout: RequestTimeout,
				// A redirect is answered, not followed: a POST turned into a
				// GET elsewhere delivers nothing.
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
		}
	})
}

// Start records in the store whether n has default webhooks. Without
// them, a job whose spec names no notify has no webhook, and its changes
// of status are not written to the outbox at all; with them, every job's
// are. The controller calls it before any job's status changes under it
// (a change made before would be gated by what the last notifier
// recorded); Run calls it until it succeeds when it was not called.
func (n *Notifier) Start(ctx context.Context) error {
	n.init()
	if err := n.Store.SetDefaultWebhooks(ctx, len(n.Default) > 0); err != nil {
		return fmt.Errorf("record whether there are default webhooks (config.yaml notify.webhooks): %w", err)
	}
	n.mu.Lock()
	n.started = true
	n.mu.Unlock()
	return nil
}

// Wake makes Run look at the outbox now; it never blocks.
func (n *Notifier) Wake() {
	n.init()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run sends deliveries until ctx ends: a round, then a wait until the next
// delivery is due, a Wake, or Poll.
func (n *Notifier) Run(ctx context.Context) {
	n.init()
	for {
		n.mu.Lock()
		started := n.started
		n.mu.Unlock()
		if !started {
			if err := n.Start(ctx); err != nil && ctx.Err() == nil {
				n.Log.Warn("notifications", "err", err)
			}
		}
		full, err := n.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			n.Log.Warn("notifications", "err", err)
		}
		wait := n.Poll
		switch {
		case err != nil:
			// The store failed us: look again in a while, not at once.
		case full:
			wait = 0
		default:
			if next, err := n.Store.NextDeliveryAt(ctx); err == nil && next != nil {
				wait = min(wait, max(next.Sub(n.Now()), 0))
			}
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		case <-n.After(wait):
		}
	}
}

// Round dispatches the outbox's new events into deliveries, then sends
// the deliveries that are due, at most Batch of each and Senders at a
// time. full says a batch was full: more may be waiting.
func (n *Notifier) Round(ctx context.Context) (full bool, err error) {
	n.init()
	evs, err := n.Store.UndispatchedEvents(ctx, dispatchBatch)
	if err != nil {
		return false, fmt.Errorf("read the outbox: %w", err)
	}
	// One transaction for the batch: many events go to no webhook (a kind
	// no webhook asked for), and a write each would queue behind the
	// controller's own writes.
	ds := make([]store.Dispatch, len(evs))
	for i, e := range evs {
		ds[i] = n.dispatch(ctx, e)
	}
	if err := n.Store.DispatchEvents(ctx, ds); err != nil {
		return false, fmt.Errorf("dispatch %d events: %w", len(ds), err)
	}
	for _, e := range evs {
		if e.To.Terminal() {
			n.forget(e.JobID)
		}
	}
	due, err := n.Store.DueDeliveries(ctx, n.Now(), n.Batch)
	if err != nil {
		return false, fmt.Errorf("read due deliveries: %w", err)
	}
	slots := make(chan struct{}, n.Senders)
	var wg sync.WaitGroup
	for _, d := range due {
		slots <- struct{}{}
		if ctx.Err() != nil {
			<-slots
			break // stopping: no new try begins
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := n.deliver(ctx, d); err != nil && ctx.Err() == nil {
				n.Log.Warn("notification", "job", d.Event.JobID, "delivery", d.ID, "url", d.URL, "err", err)
			}
		}()
	}
	wg.Wait()
	return len(evs) == dispatchBatch || len(due) == n.Batch, nil
}

// dispatchBatch bounds the events one round dispatches.
const dispatchBatch = 500

// dispatch says where event e goes: one delivery per webhook of its task
// that wants one of the kinds the change is.
func (n *Notifier) dispatch(ctx context.Context, e store.NotifyEvent) store.Dispatch {
	hooks, err := n.hooksOf(ctx, e.JobID, e.Task)
	if err != nil {
		// The job's spec cannot be read: its events go nowhere, rather
		// than holding up every other job's.
		n.Log.Warn("notifications of a job", "job", e.JobID, "err", err)
	}
	kinds := Kinds(e.To)
	var ds []store.NewDelivery
	for _, w := range hooks {
		if k, ok := pick(w, kinds); ok && !slices.ContainsFunc(ds, func(d store.NewDelivery) bool { return d.URL == w.URL }) {
			ds = append(ds, store.NewDelivery{URL: w.URL, Kind: k, Secret: w.Secret})
		}
	}
	return store.Dispatch{Event: e, Deliveries: ds}
}

// Kinds are the kinds of event a change to status to is, the most
// particular first.
func Kinds(to lifecycle.Status) []string {
	switch {
	case to == lifecycle.Succeeded:
		return []string{schema.EventSucceeded, schema.EventStatus}
	case to == lifecycle.Recovering:
		return []string{schema.EventRecovery, schema.EventStatus}
	case to.Terminal() && to != lifecycle.Cancelled:
		return []string{schema.EventFailed, schema.EventStatus}
	}
	return []string{schema.EventStatus}
}

// pick is the most particular of kinds that w wants.
func pick(w schema.Webhook, kinds []string) (string, bool) {
	for _, k := range kinds {
		if w.Wants(k) {
			return k, true
		}
	}
	return "", false
}

// deliver makes one try of d, recorded before it is sent and after.
func (n *Notifier) deliver(ctx context.Context, d *store.Delivery) error {
	try, err := n.Store.BeginTry(ctx, d.ID)
	if errors.Is(err, store.ErrDeliveryDone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record the try: %w", err)
	}
	// A try that began ends and is recorded even when the notifier is
	// stopping (the client's timeout bounds it): a receiver that got the
	// POST is not sent it again by the next controller. Only a controller
	// killed in between leaves it "sending", to be tried again.
	sctx := context.WithoutCancel(ctx)
	return n.Store.EndTry(sctx, d.ID, n.send(sctx, d, try))
}

// send POSTs d's event and says how the try ended.
func (n *Notifier) send(ctx context.Context, d *store.Delivery, try int) store.TryOutcome {
	var key []byte
	if d.Secret != "" {
		k, ok := n.Secrets[d.Secret]
		if !ok {
			return store.TryOutcome{State: store.DeliveryFailed,
				Error: fmt.Sprintf("no signing key %q in config.yaml notify.secrets; add it and restart the controller for later events", d.Secret)}
		}
		key = []byte(k)
	}
	jobName, taskName := n.names(ctx, d.Event.JobID, d.Event.Task)
	body, err := Body(d, jobName, taskName)
	if err != nil {
		return store.TryOutcome{State: store.DeliveryFailed, Error: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return store.TryOutcome{State: store.DeliveryFailed, Error: fmt.Sprintf("cannot make a request to it: %v", err)}
	}
	Sign(req.Header, body, key, n.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sortie-notify/1")
	req.Header.Set(HeaderEvent, d.Kind)
	req.Header.Set(HeaderDelivery, DeliveryKey(d))
	resp, err := n.Client.Do(req)
	if err != nil {
		return n.again(try, 0, fmt.Sprintf("try %d: %v", try, err))
	}
	defer resp.Body.Close()
	msg := fmt.Sprintf("try %d: %s%s", try, resp.Status, answer(resp))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return store.TryOutcome{State: store.DeliveryDelivered, HTTPStatus: code}
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return n.again(try, code, msg)
	case code >= 300 && code < 400:
		return store.TryOutcome{State: store.DeliveryFailed, HTTPStatus: code,
			Error: msg + fmt.Sprintf("; redirected to %q, which is not followed: give the final address", resp.Header.Get("Location"))}
	default:
		// 4xx: the receiver refuses this request; sending it again
		// changes nothing.
		return store.TryOutcome{State: store.DeliveryFailed, HTTPStatus: code, Error: msg}
	}
}

// again schedules another try after a failed one, or gives up after
// MaxTries.
func (n *Notifier) again(try, code int, msg string) store.TryOutcome {
	if try >= n.MaxTries {
		return store.TryOutcome{State: store.DeliveryFailed, HTTPStatus: code, Error: fmt.Sprintf("%s; gave up after %d tries", msg, try)}
	}
	return store.TryOutcome{State: store.DeliveryPending, HTTPStatus: code, Error: msg, NextTryAt: n.Now().Add(n.Retry.wait(try))}
}

// answer is the start of a refusal's body, for the delivery's error.
func answer(resp *http.Response) string {
	b := make([]byte, 200)
	k, _ := resp.Body.Read(b)
	s := string(bytes.ToValidUTF8(bytes.TrimSpace(b[:k]), []byte("?")))
	if s == "" {
		return ""
	}
	return ": " + s
}
