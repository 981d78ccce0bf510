package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

func eventsOf(t *testing.T, s *Store) []string {
	t.Helper()
	evs, err := s.UndispatchedEvents(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("job %d task %d attempt %d %s->%s %q %s", e.JobID, e.Task, e.Attempt, e.From, e.To, e.Reason, showCodes(e.ExitCodes)))
	}
	return out
}

func showCodes(cs []*int) string {
	s := "["
	for i, c := range cs {
		if i > 0 {
			s += ","
		}
		if c == nil {
			s += "null"
		} else {
			s += fmt.Sprint(*c)
		}
	}
	return s + "]"
}

// Every change of a job's status is in the outbox, written by the
// transaction that made it; a change refused writes no event, and a write
// that leaves the status as it is writes none either.
func TestEveryStatusChangeIsAnEvent(t *testing.T) { onEach(t, testEveryStatusChangeIsAnEvent) }

func testEveryStatusChangeIsAnEvent(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(`{}`)}, []NewTask{{Name: "t0"}})
	if err != nil {
		t.Fatal(err)
	}
	a1, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	running(t, s, a1)
	if err := s.SetStatusReason(ctx, id, "waiting for SSH"); err != nil {
		t.Fatal(err)
	}
	restart := strategy.Decision{Action: strategy.Restart, Counters: strategy.Counters{RecoveryCount: 1}, Reason: "exit code 29 matched recover_on_exit_codes [29]"}
	if err := s.EndAttempt(ctx, a1, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(29), nil}}, restart, Facts{}); err != nil {
		t.Fatal(err)
	}
	a2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), a1, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	running(t, s, a2)
	fail := strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "restart 1/0 on errors"}
	if err := s.EndAttempt(ctx, a2, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1), code(0)}}, fail, Facts{}); err != nil {
		t.Fatal(err)
	}
	// Refused: a terminal status never changes, and nothing is written.
	if err := s.FinishJob(ctx, id, cancelled); !errors.Is(err, ErrTerminal) {
		t.Fatalf("FinishJob of an ended job: %v", err)
	}
	if _, err := s.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf(`job %d task 0 attempt 1 PENDING->STARTING "" []`, id),
		fmt.Sprintf(`job %d task 0 attempt 1 STARTING->RUNNING "" []`, id),
		fmt.Sprintf(`job %d task 0 attempt 1 RUNNING->RECOVERING "exit code 29 matched recover_on_exit_codes [29]" [29,null]`, id),
		fmt.Sprintf(`job %d task 0 attempt 2 RECOVERING->RUNNING "" [29,null]`, id),
		fmt.Sprintf(`job %d task 0 attempt 2 RUNNING->FAILED "restart 1/0 on errors" [1,0]`, id),
	}
	if diff := cmp.Diff(want, eventsOf(t, s)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A delivery is written once per event and webhook however often the event
// is dispatched; a try is recorded before it is sent, and once delivered it
// is never tried again.
func TestDeliveriesAreRecordedBeforeAndAfterEachTry(t *testing.T) {
	onEach(t, testDeliveriesAreRecordedBeforeAndAfterEachTry)
}

func testDeliveriesAreRecordedBeforeAndAfterEachTry(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, _ := s.CreateJob(ctx, &Job{Name: "n", Spec: []byte(`{}`)}, []NewTask{{Name: "t"}})
	if _, err := s.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishJob(ctx, id, cancelled); err != nil {
		t.Fatal(err)
	}
	evs, _ := s.UndispatchedEvents(ctx, 10)
	if len(evs) != 2 {
		t.Fatalf("events: %+v", evs)
	}
	// The first event no webhook wants: it is dropped.
	if err := s.DispatchEvents(ctx, []Dispatch{{Event: evs[0]}}); err != nil {
		t.Fatal(err)
	}
	hooks := []NewDelivery{{URL: "http://a.example/x", Kind: "status"}, {URL: "http://b.example/y", Kind: "status", Secret: "ops"}}
	for range 2 {
		if err := s.DispatchEvents(ctx, []Dispatch{{Event: evs[1], Deliveries: hooks}}); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := s.UndispatchedEvents(ctx, 10); len(left) != 0 {
		t.Fatalf("undispatched after dispatch: %+v", left)
	}
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	due, err := s.DueDeliveries(ctx, far, 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("due: %+v %v", due, err)
	}
	if d := due[1]; d.Event.To != lifecycle.Cancelled || d.Event.From != lifecycle.Cancelling || d.Secret != "ops" || d.State != DeliveryPending || d.Kind != "status" {
		t.Errorf("delivery: %+v", d)
	}
	n, err := s.BeginTry(ctx, due[0].ID)
	if err != nil || n != 1 {
		t.Fatalf("BeginTry: %d %v", n, err)
	}
	// Begun and not ended (a crash in between): due again, as "sending",
	// once TryLease has passed.
	if d, _ := s.DueDeliveries(ctx, s.now(), 10); len(d) != 1 || d[0].ID != due[1].ID {
		t.Fatalf("due while a try is under way: %+v", d)
	}
	again, _ := s.DueDeliveries(ctx, far, 10)
	if len(again) != 2 || again[1].ID != due[0].ID || again[1].State != DeliverySending || again[1].Tries != 1 || again[1].SentAt == nil {
		t.Fatalf("after BeginTry: %+v", again[1])
	}
	retryAt := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.EndTry(ctx, due[0].ID, TryOutcome{State: DeliveryPending, HTTPStatus: 503, Error: "503 Service Unavailable", NextTryAt: retryAt}); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.DueDeliveries(ctx, retryAt.Add(-time.Nanosecond), 10); len(d) != 1 || d[0].ID != due[1].ID {
		t.Fatalf("due before the retry time: %+v", d)
	}
	if next, err := s.NextDeliveryAt(ctx); err != nil || next == nil || next.After(retryAt) {
		t.Fatalf("NextDeliveryAt: %v %v", next, err)
	}
	if n, err := s.BeginTry(ctx, due[0].ID); err != nil || n != 2 {
		t.Fatalf("second try: %d %v", n, err)
	}
	if err := s.EndTry(ctx, due[0].ID, TryOutcome{State: DeliveryDelivered, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginTry(ctx, due[0].ID); !errors.Is(err, ErrDeliveryDone) {
		t.Fatalf("a try of a delivered delivery: %v", err)
	}
	ds, _ := s.Deliveries(ctx, id)
	if len(ds) != 2 || ds[0].State != DeliveryDelivered || ds[0].Tries != 2 || ds[0].HTTPStatus != 200 || ds[0].DoneAt == nil || ds[0].LastError != "503 Service Unavailable" {
		t.Fatalf("deliveries: %+v", ds[0])
	}
	if d, _ := s.DueDeliveries(ctx, far, 10); len(d) != 1 {
		t.Fatalf("due after delivery: %+v", d)
	}
}

// Without default webhooks, the changes of a job whose spec names no
// notify are not written to the outbox at all (no webhook can want them);
// those of a job that names notify are, and with default webhooks every
// job's are. A job stored before jobs.notify existed (the column's
// default) keeps its events.
func TestOutboxOnlyForJobsAWebhookCanWant(t *testing.T) {
	onEach(t, testOutboxOnlyForJobsAWebhookCanWant)
}

func testOutboxOnlyForJobsAWebhookCanWant(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	if on, err := s.DefaultWebhooks(ctx); err != nil || !on {
		t.Fatalf("a new store's default webhooks: %v %v, want true until a notifier says", on, err)
	}
	if err := s.SetDefaultWebhooks(ctx, false); err != nil {
		t.Fatal(err)
	}
	if on, err := s.DefaultWebhooks(ctx); err != nil || on {
		t.Fatalf("default webhooks after turning them off: %v %v", on, err)
	}
	create := func(spec string) int64 {
		t.Helper()
		id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(spec)}, []NewTask{{Name: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// moves job id through STARTING and RUNNING to FAILED: three changes.
	move := func(id int64) { t.Helper(); endFailed(t, s, id, "exit code 1") }
	stored := func(id int64) int {
		t.Helper()
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM notify_events WHERE job_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	plain := create(`{"tasks":[{"name":"t","run":"true"}]}`)
	hooked := create(`{"tasks":[{"name":"t","notify":{"webhooks":[{"url":"http://127.0.0.1:1/h"}]},"run":"true"}]}`)
	// As an older sortie stored a job: without naming jobs.notify.
	var old int64
	if err := s.db.QueryRowContext(ctx, `INSERT INTO jobs (name, status, spec, submitted_at) VALUES ('old', ?, '{}', ?) RETURNING id`,
		lifecycle.Pending, fmtTime(time.Now())).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO tasks (job_id, idx, name, status) VALUES (?, 0, 't', ?)`, old, lifecycle.Pending); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{plain, hooked, old} {
		move(id)
	}
	if n := stored(plain); n != 0 {
		t.Errorf("job without notify, no default webhooks: %d events written, want none", n)
	}
	if n := stored(hooked); n != 3 {
		t.Errorf("job with notify: %d events written, want 3", n)
	}
	if n := stored(old); n != 3 {
		t.Errorf("job stored without jobs.notify: %d events written, want 3", n)
	}
	if err := s.SetDefaultWebhooks(ctx, true); err != nil {
		t.Fatal(err)
	}
	later := create(`{"tasks":[{"name":"t","run":"true"}]}`)
	move(later)
	if n := stored(later); n != 3 {
		t.Errorf("job without notify, default webhooks: %d events written, want 3", n)
	}
}
