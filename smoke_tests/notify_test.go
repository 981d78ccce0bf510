package smoke_tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/notify"
)

const hookKey = "smoke-test-signing-key-0123456789"

// hookReceiver refuses its first request (503) and records the rest,
// checking each signature.
type hookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	n        int
	accepted map[string]int            // by X-Sortie-Delivery
	bodies   map[string]map[string]any // by X-Sortie-Delivery
	bad      []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{accepted: map[string]int{}, bodies: map[string]map[string]any{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.n++
		if r.n == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		if err := notify.Verify(req.Header, b, []byte(hookKey), time.Now(), 5*time.Minute); err != nil {
			r.bad = append(r.bad, err.Error())
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p map[string]any
		json.Unmarshal(b, &p)
		k := req.Header.Get(notify.HeaderDelivery)
		r.accepted[k]++
		r.bodies[k] = p
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// statuses are the statuses job id's accepted events told of.
func (r *hookReceiver) statuses(id int64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.bodies {
		if p["job_id"] == float64(id) {
			out = append(out, p["status"].(string))
		}
	}
	return out
}

// Through the real programs: a job's events reach a webhook that refuses
// the first try, signed; jobs show lists the deliveries; a controller
// stopped and started again over the same home sends the next job's events
// and none of the first job's again.
func TestWebhookNotifications(t *testing.T) {
	rcv := newHookReceiver(t)
	e := newEnv(t)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "notify:\n  secrets:\n    ops: " + hookKey + "\n"
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	task := e.write("fail.yaml", "name: hooked\nnotify:\n  webhooks:\n  - {url: "+rcv.URL+"/hook, events: [status, failed], secret: ops}\nrun: exit 3\n")
	first := e.launch(task)
	e.waitStatus(first, "FAILED")
	done := func(id int64) func(contract.JobDetail) bool {
		return func(d contract.JobDetail) bool {
			if len(d.Notifications) == 0 {
				return false
			}
			for _, n := range d.Notifications {
				if n.State != "delivered" {
					return false
				}
			}
			return d.Notifications[len(d.Notifications)-1].Status == "FAILED"
		}
	}
	d := e.waitFor(first, 60*time.Second, "every notification delivered", done(first))
	retried := 0
	for _, n := range d.Notifications {
		if n.Tries == 2 && n.Error != nil && strings.Contains(*n.Error, "try 1: 503 Service Unavailable: warming up") {
			retried++
		}
	}
	if retried != 1 {
		t.Errorf("%d deliveries record the refused try and a second one, want 1: %+v", retried, d.Notifications)
	}
	if last := d.Notifications[len(d.Notifications)-1]; last.Event != "failed" {
		t.Errorf("the last event is %q, want failed", last.Event)
	}
	if got := strings.Join(rcv.statuses(first), ","); !strings.Contains(got, "FAILED") || !strings.Contains(got, "RUNNING") {
		t.Errorf("the receiver got %s", got)
	}
	if out := e.must("jobs", "show", strconv.FormatInt(first, 10)).stdout; !strings.Contains(out, "Notifications:") || !strings.Contains(out, "HTTP 204") {
		t.Errorf("jobs show lacks the notifications:\n%s", out)
	}

	// A new controller over the same home.
	e.must("controller", "stop")
	second := e.launch(task, "--retry-failed")
	e.waitStatus(second, "FAILED")
	e.waitFor(second, 60*time.Second, "every notification delivered", done(second))
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for k, n := range rcv.accepted {
		if n != 1 {
			t.Errorf("delivery %s accepted %d times", k, n)
		}
	}
	if len(rcv.bad) > 0 {
		t.Errorf("signatures refused: %v", rcv.bad)
	}
	if want := len(d.Notifications) * 2; len(rcv.accepted) != want {
		t.Errorf("%d deliveries accepted, want %d", len(rcv.accepted), want)
	}
}
