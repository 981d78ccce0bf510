package metadata

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sortie/provision/node/notice"
	"sortie/provision/node/notice/noticetest"
	"sync"
	"testing"
)

// fakeGCE is the metadata server's instance/preempted: a value with an
// ETag, and wait_for_change requests held until the ETag moves on.
type fakeGCE struct {
	mu      sync.Mutex
	value   string
	etag    int
	noETag  bool
	changed chan struct{}
	// waiting receives each query of a request about to be held.
	waiting chan url.Values
	queries []url.Values
	// failFirst answers 503 to this many first requests.
	failFirst int
	body      string // answered instead of the value when set
}

func newFakeGCE(value string) *fakeGCE {
	return &fakeGCE{value: value, etag: 1, changed: make(chan struct{}), waiting: make(chan url.Values, 100)}
}

func (f *fakeGCE) set(value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value = value
	f.etag++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeGCE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != gcePreemptedPath {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	f.mu.Lock()
	f.queries = append(f.queries, q)
	if len(f.queries) <= f.failFirst {
		f.mu.Unlock()
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	if q.Get("wait_for_change") == "true" && (q.Get("last_etag") == "" || q.Get("last_etag") == fmt.Sprint(f.etag)) {
		changed := f.changed
		f.mu.Unlock()
		f.waiting <- q
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
	}
	value, etag := f.value, f.etag
	if f.body != "" {
		value = f.body
	}
	f.mu.Unlock()
	if !f.noETag {
		w.Header().Set("ETag", fmt.Sprint(etag))
	}
	fmt.Fprint(w, value)
}

// runGCE watches f in the background with the real clock (no wait in
// these tests is timed: the server holds requests until the test moves the
// value) and returns the notices as they come.
func runGCE(t *testing.T, f *fakeGCE) (<-chan notice.Notice, *noticetest.Clock) {
	srv := httptest.NewServer(f)
	ctx, cancel := context.WithCancel(context.Background())
	found := make(chan notice.Notice, 10)
	done := make(chan struct{})
	clock := noticetest.NewClock(nil)
	go func() {
		defer close(done)
		notice.Watch(ctx, notice.Config{Source: notice.SourceGCE, Endpoint: srv.URL, Now: clock.Now, After: clock.After, Metadata: HTTP{}},
			func(n notice.Notice) { found <- n })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	return found, clock
}

func TestGCEPreemptedWaitsForChange(t *testing.T) {
	f := newFakeGCE("FALSE")
	found, clock := runGCE(t, f)
	q := <-f.waiting
	if q.Get("last_etag") != "1" || q.Get("timeout_sec") != "60" {
		t.Errorf("long poll query %v, want last_etag=1 and timeout_sec=60", q)
	}
	select {
	case n := <-found:
		t.Fatalf("found %v while the instance is not preempted", n)
	default:
	}
	f.set("TRUE")
	n := <-found
	if n.Kind != notice.KindPreempted || n.Source != notice.SourceGCE || !n.At.Equal(clock.Now()) || n.Deadline.Sub(n.At) != notice.GCEWarning {
		t.Errorf("notice %+v, want preempted from gce-metadata with a deadline 30s after it was heard", n)
	}
	f.mu.Lock()
	first := f.queries[0]
	f.mu.Unlock()
	if first.Get("wait_for_change") != "" {
		t.Errorf("first query %v, want an answer at once (no wait_for_change)", first)
	}
}

func TestGCEAlreadyPreempted(t *testing.T) {
	f := newFakeGCE("TRUE")
	found, _ := runGCE(t, f)
	if n := <-found; n.Kind != notice.KindPreempted {
		t.Errorf("notice %+v, want preempted", n)
	}
}

func TestGCEChangeBackAndForth(t *testing.T) {
	// A value that changes and is still FALSE (an ETag move with no
	// preemption) is no notice; the watch goes on with the new ETag.
	f := newFakeGCE("FALSE")
	found, _ := runGCE(t, f)
	<-f.waiting
	f.set("FALSE")
	if q := <-f.waiting; q.Get("last_etag") != "2" {
		t.Errorf("query after the change %v, want last_etag=2", q)
	}
	f.set("TRUE")
	if n := <-found; n.Kind != notice.KindPreempted {
		t.Errorf("notice %+v, want preempted", n)
	}
}

func TestGCEWithoutETag(t *testing.T) {
	f := newFakeGCE("FALSE")
	f.noETag = true
	found, _ := runGCE(t, f)
	if q := <-f.waiting; q.Has("last_etag") {
		t.Errorf("query %v, want no last_etag when the server gave none", q)
	}
	f.set("TRUE")
	if n := <-found; n.Kind != notice.KindPreempted {
		t.Errorf("notice %+v, want preempted", n)
	}
}

func TestGCEErrorsAreRetried(t *testing.T) {
	f := newFakeGCE("TRUE")
	f.failFirst = 2
	found, clock := runGCE(t, f)
	<-found
	if len(clock.Waits()) != 2 || clock.Waits()[0] != notice.DefaultInterval {
		t.Errorf("waits %v, want two waits of %s after the two errors", clock.Waits(), notice.DefaultInterval)
	}
}

func TestGCEUnreadableValueIsNoNotice(t *testing.T) {
	f := newFakeGCE("FALSE")
	f.body = "<html>proxy error</html>"
	srv := httptest.NewServer(f)
	defer srv.Close()
	found, clock := watch(t, notice.Config{Source: notice.SourceGCE, Endpoint: srv.URL}, 3)
	if len(found) != 0 || len(clock.Waits()) != 3 {
		t.Errorf("found %v after %d waits, want no notice and a retry after each unreadable answer", found, len(clock.Waits()))
	}
}
