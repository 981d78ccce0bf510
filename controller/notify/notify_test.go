package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
	"sortie/strategy/clocktest"
)

func newClock() *clocktest.Clock { return clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) }

// receiver is a webhook endpoint that answers fail (a status code) to the
// first failFirst requests, and records every request.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	failFirst int
	fail      int
	got       []got
	// hook, when set, runs inside the handler before it answers.
	hook func(g got)
}

type got struct {
	header http.Header
	body   []byte
	ok     bool
}

func newReceiver(t *testing.T, failFirst, fail int) *receiver {
	r := &receiver{failFirst: failFirst, fail: fail}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		g := got{header: req.Header.Clone(), body: b, ok: len(r.got) >= r.failFirst}
		r.got = append(r.got, g)
		hook := r.hook
		r.mu.Unlock()
		if hook != nil {
			hook(g)
		}
		if !g.ok {
			http.Error(w, "not now", r.fail)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []got {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]got(nil), r.got...)
}

// accepted counts the requests answered 2xx by delivery key.
func (r *receiver) accepted() map[string]int {
	out := map[string]int{}
	for _, g := range r.requests() {
		if g.ok {
			out[g.header.Get(HeaderDelivery)]++
		}
	}
	return out
}

const key = "0123456789abcdef-test-key"

func openStore(t *testing.T, path string, clk *clocktest.Clock) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// submit stores a job of the task file yaml.
func submit(t *testing.T, st *store.Store, yaml string) int64 {
	t.Helper()
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var tasks []store.NewTask
	for _, tk := range p.Tasks {
		tasks = append(tasks, store.NewTask{Name: tk.Name})
	}
	id, err := st.CreateJob(context.Background(), &store.Job{Name: p.Name, Spec: spec}, tasks)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// runAndFail moves job id through STARTING and RUNNING to FAILED.
func runAndFail(t *testing.T, st *store.Store, id int64) {
	t.Helper()
	ctx := context.Background()
	a := start(t, st, id, 0)
	one, zero := 1, 0
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&one, &zero}, Reason: "node 0 exited 1"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "exit code 1; no restarts on errors (max_restarts_on_errors 0)"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, st *store.Store, id int64, task int) *store.Attempt {
	t.Helper()
	ctx := context.Background()
	a, err := st.NewAttempt(ctx, id, task, func(n int) string { return fmt.Sprintf("sortie-%d-%d-%d", id, task, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0", "n1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func task(url, events string) string {
	return fmt.Sprintf("name: train\nnotify:\n  webhooks:\n  - {url: %q, events: %s, secret: ops}\nrun: \"true\"\n", url, events)
}

func newNotifier(st *store.Store, clk *clocktest.Clock) *Notifier {
	return &Notifier{Store: st, Now: clk.Now, Secrets: map[string]string{"ops": key}, Senders: 1}
}

// A receiver that fails the first tries gets every event once it answers,
// each try after a doubling wait, signed, with the same key on every try.
func TestFailingReceiverGetsEveryEventOnceWithBackoff(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), clk)
	rcv := newReceiver(t, 3, http.StatusServiceUnavailable)
	id := submit(t, st, task(rcv.URL, "[status, failed]"))
	runAndFail(t, st, id)
	n := newNotifier(st, clk)

	// Round 1: three events (STARTING, RUNNING, FAILED), three tries, all
	// refused (503).
	if _, err := n.Round(ctx); err != nil {
		t.Fatal(err)
	}
	ds, _ := st.Deliveries(ctx, id)
	if len(ds) != 3 {
		t.Fatalf("deliveries: %d, want 3", len(ds))
	}
	for _, d := range ds {
		if d.State != store.DeliveryPending || d.Tries != 1 || d.HTTPStatus != 503 || !strings.Contains(d.LastError, "503 Service Unavailable: not now") ||
			!d.NextTryAt.Equal(clk.Now().Add(2*time.Second)) {
			t.Errorf("after a refused try: %+v", d)
		}
	}
	if k := []string{ds[0].Kind, ds[1].Kind, ds[2].Kind}; strings.Join(k, ",") != "status,status,failed" {
		t.Errorf("kinds: %v", k)
	}
	// Nothing is due before the back-off ends.
	clk.Advance(time.Second)
	n.Round(ctx)
	if len(rcv.requests()) != 3 {
		t.Fatalf("a try before its time: %d requests", len(rcv.requests()))
	}
	clk.Advance(time.Second)
	n.Round(ctx)
	ds, _ = st.Deliveries(ctx, id)
	for _, d := range ds {
		if d.State != store.DeliveryDelivered || d.Tries != 2 || d.HTTPStatus != 204 || d.DoneAt == nil {
			t.Errorf("after the second try: %+v", d)
		}
	}
	// Rounds after: nothing more is sent.
	clk.Advance(time.Hour)
	n.Round(ctx)
	reqs := rcv.requests()
	if len(reqs) != 6 {
		t.Fatalf("requests: %d, want 6", len(reqs))
	}
	for k, c := range rcv.accepted() {
		if c != 1 {
			t.Errorf("delivery %s accepted %d times", k, c)
		}
	}
	// Each delivery's two tries carry the same key and body.
	for i := 0; i < 3; i++ {
		a, b := reqs[i], reqs[i+3]
		if a.header.Get(HeaderDelivery) != b.header.Get(HeaderDelivery) || string(a.body) != string(b.body) {
			t.Errorf("try 1 and 2 differ: %s %s / %s %s", a.header.Get(HeaderDelivery), a.body, b.header.Get(HeaderDelivery), b.body)
		}
	}
	last := reqs[5]
	sent := clk.Now().Add(-time.Hour)
	if err := Verify(last.header, last.body, []byte(key), sent, 5*time.Minute); err != nil {
		t.Errorf("signature: %v", err)
	}
	if err := Verify(last.header, last.body, []byte("another key 0123456"), sent, 5*time.Minute); err == nil {
		t.Error("a signature checked with another key passed")
	}
	if err := Verify(last.header, append(last.body, ' '), []byte(key), sent, 5*time.Minute); err == nil {
		t.Error("a changed body passed")
	}
	if err := Verify(last.header, last.body, []byte(key), sent.Add(10*time.Minute), 5*time.Minute); err == nil {
		t.Error("a replay 10 minutes later passed")
	}
	var p map[string]any
	if err := json.Unmarshal(last.body, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"delivery": last.header.Get(HeaderDelivery), "event": "failed", "job_id": float64(id), "job_name": "train", "task": float64(0),
		"task_name": "train", "attempt": float64(1), "status": "FAILED", "previous_status": "RUNNING",
		"reason": "exit code 1; no restarts on errors (max_restarts_on_errors 0)", "exit_codes": []any{float64(1), float64(0)},
		"show": fmt.Sprintf("sortie jobs show %d", id),
		"text": fmt.Sprintf("sortie job %d (train) FAILED: exit code 1; no restarts on errors (max_restarts_on_errors 0) (attempt 1; exit codes 1, 0). sortie jobs show %d", id, id),
	}
	for k, v := range want {
		if fmt.Sprint(p[k]) != fmt.Sprint(v) {
			t.Errorf("body %s = %v, want %v", k, p[k], v)
		}
	}
	if _, ok := p["at"]; !ok || len(p) != len(want)+1 {
		t.Errorf("body fields: %v", p)
	}
	if last.header.Get(HeaderEvent) != "failed" || last.header.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", last.header)
	}
}

func TestRetryWaitDoublesUpToItsCap(t *testing.T) {
	r := DefaultRetry()
	for n, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 8: 256 * time.Second, 9: 5 * time.Minute, 100: 5 * time.Minute} {
		if got := r.wait(n); got != want {
			t.Errorf("wait after %d tries = %s, want %s", n, got, want)
		}
	}
}

// What no retry fixes is given up at once, and a receiver that never
// answers is given up after MaxTries; each with the reason.
func TestGivingUp(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		status int
		secret string
		want   string
		rounds int
	}{
		{"refused", http.StatusUnauthorized, "ops", "try 1: 401 Unauthorized: not now", 1},
		{"never answers", http.StatusBadGateway, "ops", "try 3: 502 Bad Gateway: not now; gave up after 3 tries", 3},
		{"no such key", http.StatusOK, "gone", `no signing key "gone" in config.yaml notify.secrets; add it and restart the controller for later events`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			st := openStore(t, filepath.Join(t.TempDir(), "state.db"), clk)
			rcv := newReceiver(t, 1000, tc.status)
			id := submit(t, st, strings.Replace(task(rcv.URL, "[succeeded, failed]"), "secret: ops", "secret: "+tc.secret, 1))
			runAndFail(t, st, id)
			n := newNotifier(st, clk)
			n.MaxTries = 3
			for range tc.rounds + 2 {
				if _, err := n.Round(ctx); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Minute)
			}
			ds, _ := st.Deliveries(ctx, id)
			if len(ds) != 1 || ds[0].State != store.DeliveryFailed || ds[0].LastError != tc.want || ds[0].DoneAt == nil {
				for _, d := range ds {
					t.Logf("%+v", d)
				}
				t.Fatalf("deliveries: %d", len(ds))
			}
			if tc.secret == "gone" && len(rcv.requests()) != 0 {
				t.Errorf("sent without its signing key")
			}
			if tc.secret == "ops" && len(rcv.requests()) != tc.rounds {
				t.Errorf("requests: %d, want %d", len(rcv.requests()), tc.rounds)
			}
		})
	}
}

// A task without notify uses config.yaml's webhooks; notify: {webhooks:
// []} sends nothing; a webhook gets one delivery per event, of the most
// particular kind it asked for, and only for the events it asked for.
func TestWhichWebhooksAnEventGoesTo(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), clk)
	id := submit(t, st, "name: p\n---\nname: a\nrun: \"true\"\n---\nname: b\nnotify: {webhooks: []}\nrun: \"true\"\n---\nname: c\nnotify:\n  webhooks:\n  - {url: http://127.0.0.1:1/own, events: [succeeded, status]}\nrun: \"true\"\n")
	ctx0 := context.Background()
	ok := 0
	next := func(task int, last bool) {
		a := start(t, st, id, task)
		d := strategy.Decision{Action: strategy.NextTask, Reason: "next"}
		if last {
			d = strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "done"}
		}
		if err := st.EndAttempt(ctx0, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{&ok}}, d, store.Facts{}); err != nil {
			t.Fatal(err)
		}
	}
	next(0, false)
	next(1, false)
	next(2, true)
	n := &Notifier{Store: st, Now: clk.Now, Default: []schema.Webhook{{URL: "http://127.0.0.1:1/default", Events: []string{"status"}}},
		Client: &http.Client{Transport: refuse{}}}
	if _, err := n.Round(ctx); err != nil {
		t.Fatal(err)
	}
	ds, _ := st.Deliveries(ctx, id)
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("task %d %s->%s %s %s", d.Event.Task, d.Event.From, d.Event.To, d.Kind, d.URL[strings.LastIndex(d.URL, "/")+1:]))
	}
	want := []string{
		"task 0 PENDING->STARTING status default",
		"task 0 STARTING->RUNNING status default",
		"task 2 RUNNING->STARTING status own",
		"task 2 STARTING->RUNNING status own",
		"task 2 RUNNING->SUCCEEDED succeeded own",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("deliveries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if left, _ := st.UndispatchedEvents(ctx, 100); len(left) != 0 {
		t.Errorf("events left undispatched: %+v", left)
	}
}

// refuse is a transport that reaches nothing.
type refuse struct{}

func (refuse) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("connection refused")
}

func TestKindsOfAChange(t *testing.T) {
	for to, want := range map[lifecycle.Status]string{
		lifecycle.Running: "status", lifecycle.Recovering: "recovery,status", lifecycle.Succeeded: "succeeded,status",
		lifecycle.Failed: "failed,status", lifecycle.FailedNoResource: "failed,status", lifecycle.FailedController: "failed,status",
		lifecycle.Cancelled: "status",
	} {
		if got := strings.Join(Kinds(to), ","); got != want {
			t.Errorf("Kinds(%s) = %s, want %s", to, got, want)
		}
	}
}

// A controller that stops (is killed) and a new one over the same store:
// what was recorded delivered is never sent again; an event written while
// no controller ran is sent; a try that was sent but whose outcome was
// never recorded is sent again with the same key and body, so the
// receiver can drop the copy (at least once, in that window only).
func TestANewControllerNeitherLosesNorResends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	clk := newClock()
	st1, err := store.Open(context.Background(), path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, 0, 0)
	job1 := submit(t, st1, task(rcv.URL, "[status]"))
	runAndFail(t, st1, job1)
	n1 := newNotifier(st1, clk)
	if _, err := n1.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	job2 := submit(t, st1, task(rcv.URL, "[status]"))
	start(t, st1, job2, 0)
	// The first POST of job 2 reaches the receiver, and the controller
	// dies before it records the answer: its store is gone at once.
	var once sync.Once
	rcv.mu.Lock()
	rcv.hook = func(g got) {
		if strings.Contains(string(g.body), fmt.Sprintf(`"job_id":%d,`, job2)) {
			once.Do(func() { st1.Close() })
		}
	}
	rcv.mu.Unlock()
	n1.Round(context.Background())
	ds1 := rcv.requests()
	if len(ds1) != 4 {
		t.Fatalf("requests before the stop: %d, want 3 of job 1 and 1 of job 2", len(ds1))
	}
	crashed := ds1[3]

	// While no controller runs, the CLI's cancel still changes a status.
	st2 := openStore(t, path, clk)
	if _, err := st2.RequestCancel(context.Background(), []int64{job2}); err != nil {
		t.Fatal(err)
	}
	n2 := newNotifier(st2, clk)
	for range 3 {
		if _, err := n2.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	acc := rcv.accepted()
	for _, id := range []int64{job1, job2} {
		ds, _ := st2.Deliveries(context.Background(), id)
		if len(ds) != 3 {
			t.Errorf("job %d: %d deliveries, want 3", id, len(ds))
		}
		for _, d := range ds {
			k := DeliveryKey(d)
			want := 1
			if k == crashed.header.Get(HeaderDelivery) {
				want = 2
			}
			if d.State != store.DeliveryDelivered || acc[k] != want {
				t.Errorf("job %d delivery %s: %s, received %d times, want %d", id, k, d.State, acc[k], want)
			}
		}
	}
	var again *got
	for _, g := range rcv.requests()[4:] {
		if g.header.Get(HeaderDelivery) == crashed.header.Get(HeaderDelivery) {
			again = &g
		}
	}
	if again == nil || string(again.body) != string(crashed.body) {
		t.Errorf("the try whose outcome was lost was not sent again with the same key and body")
	}
}

// Run sends without being asked, looks again when woken, and when its
// context ends lets the try under way end (bounded by the client's
// timeout) and records it, beginning no other.
func TestRunSendsWhenWokenAndStopsAtOnce(t *testing.T) {
	clk := newClock()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), clk)
	arrived := make(chan got, 10)
	hold := make(chan struct{})
	defer close(hold)
	rcv := newReceiver(t, 0, 0)
	rcv.hook = func(g got) {
		arrived <- g
		if strings.Contains(string(g.body), `"status":"CANCELLED"`) {
			<-hold // a receiver that never answers
		}
	}
	id := submit(t, st, task(rcv.URL, "[status]"))
	if _, err := st.RequestCancel(context.Background(), []int64{id}); err != nil {
		t.Fatal(err)
	}
	never := make(chan time.Time) // the wait between rounds never ends by itself
	n := newNotifier(st, clk)
	n.After = func(time.Duration) <-chan time.Time { return never }
	n.Client = &http.Client{Timeout: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	wait := func(what string) got {
		select {
		case g := <-arrived:
			return g
		case <-time.After(10 * time.Second):
			t.Fatalf("no request: %s", what)
		}
		return got{}
	}
	if g := wait("the first round"); !strings.Contains(string(g.body), `"status":"CANCELLING"`) {
		t.Fatalf("first: %s", g.body)
	}
	if err := st.FinishJob(context.Background(), id, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	if on, err := st.DefaultWebhooks(context.Background()); err != nil || on {
		t.Errorf("Run did not record that there are no default webhooks before its first round: %v %v", on, err)
	}
	n.Wake()
	wait("after a wake")
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return while a receiver held its request")
	}
	ds, _ := st.Deliveries(context.Background(), id)
	if len(ds) != 2 || ds[0].State != store.DeliveryDelivered || ds[1].State != store.DeliveryPending || !strings.Contains(ds[1].LastError, "Timeout") {
		for _, d := range ds {
			t.Logf("%+v", d)
		}
		t.Fatal("the try under way at the stop is not recorded as failed, to be tried again")
	}
}

// Before any attempt ended, or after one that left no codes, exit_codes
// is null, never an empty list.
func TestBodyWithoutExitCodes(t *testing.T) {
	for _, codes := range [][]*int{nil, {}} {
		d := &store.Delivery{ID: 2, Kind: "status", Event: store.NotifyEvent{ID: 1, JobID: 7, To: lifecycle.Starting, From: lifecycle.Pending, ExitCodes: codes}}
		b, err := Body(d, "j", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"exit_codes":null`, `"task_name":null`, `"attempt":null`, `"reason":null`, `"delivery":"sortie-1-2"`,
			`"text":"sortie job 7 (j) STARTING. sortie jobs show 7"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("body %s lacks %s", b, want)
			}
		}
	}
}

// Without default webhooks, a job that names no notify writes nothing to
// the outbox and the notifier never reads it; a job with its own webhook
// gets its deliveries. A notifier with default webhooks records that it
// has them, and a job without notify gets its deliveries there; one
// without them records that too.
func TestOnlyJobsAWebhookCanWantAreNotified(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), clk)
	rcv := newReceiver(t, 0, 0)
	n := newNotifier(st, clk)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := st.DefaultWebhooks(ctx); err != nil || on {
		t.Fatalf("after a start without default webhooks: %v %v", on, err)
	}
	plain := submit(t, st, "name: plain\nrun: \"true\"\n")
	hooked := submit(t, st, task(rcv.URL, "[status]"))
	start(t, st, plain, 0)
	start(t, st, hooked, 0)
	evs, err := st.UndispatchedEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.JobID != hooked {
			t.Errorf("an event of job %d, which no webhook can want: %+v", e.JobID, e)
		}
	}
	if len(evs) != 2 {
		t.Errorf("%d events, want the 2 changes of job %d", len(evs), hooked)
	}
	if _, err := n.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, read := n.cache[plain]; read {
		t.Errorf("the notifier read job %d, which no webhook can want", plain)
	}
	if ds, _ := st.Deliveries(ctx, hooked); len(ds) != 2 || ds[0].State != store.DeliveryDelivered || ds[1].State != store.DeliveryDelivered {
		t.Errorf("deliveries of the job with its own webhook: %+v", ds)
	}

	withDefault := &Notifier{Store: st, Now: clk.Now, Default: []schema.Webhook{{URL: rcv.URL + "/default", Events: []string{"status"}}}}
	if err := withDefault.Start(ctx); err != nil {
		t.Fatal(err)
	}
	later := submit(t, st, "name: later\nrun: \"true\"\n")
	start(t, st, later, 0)
	if _, err := withDefault.Round(ctx); err != nil {
		t.Fatal(err)
	}
	ds, _ := st.Deliveries(ctx, later)
	if len(ds) != 2 || ds[0].URL != rcv.URL+"/default" || ds[1].State != store.DeliveryDelivered {
		t.Errorf("deliveries of a job without notify, with default webhooks: %+v", ds)
	}
	if err := newNotifier(st, clk).Start(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := st.DefaultWebhooks(ctx); err != nil || on {
		t.Errorf("after a start without default webhooks again: %v %v", on, err)
	}
}
