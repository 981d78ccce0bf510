package metadata

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sortie/provision/node/notice"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeIMDS answers like IMDSv2: a token from PUT /latest/api/token, every
// GET refused without a valid one, the notices present from a given poll on.
type fakeIMDS struct {
	mu sync.Mutex
	// spotFrom, rebalanceFrom: the poll (1-based count of instance-action
	// GETs) from which the notice is there; 0 never.
	spotFrom, rebalanceFrom int
	spotBody                string
	// failPolls answer 500 to these instance-action polls.
	failPolls map[int]bool
	// revokeAt: at this poll, every token issued so far stops being valid.
	revokeAt int

	polls   int
	tokens  []string
	valid   map[string]bool
	ttls    []string
	badAuth int
}

func (f *fakeIMDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.valid == nil {
		f.valid = map[string]bool{}
	}
	if r.Method == http.MethodPut && r.URL.Path == awsTokenPath {
		tok := fmt.Sprintf("token-%d", len(f.tokens)+1)
		f.tokens = append(f.tokens, tok)
		f.ttls = append(f.ttls, r.Header.Get(awsTTLHeader))
		f.valid[tok] = true
		fmt.Fprint(w, tok)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == awsActionPath {
		f.polls++
		if f.polls == f.revokeAt {
			f.valid = map[string]bool{}
		}
	}
	if !f.valid[r.Header.Get(awsTokenHeader)] {
		f.badAuth++
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case awsActionPath:
		if f.failPolls[f.polls] {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		if f.spotFrom > 0 && f.polls >= f.spotFrom {
			fmt.Fprint(w, f.spotBody)
			return
		}
	case awsRebalancePath:
		if f.rebalanceFrom > 0 && f.polls >= f.rebalanceFrom {
			json.NewEncoder(w).Encode(map[string]string{"noticeTime": "2026-11-30T11:00:00Z"})
			return
		}
	}
	http.NotFound(w, r)
}

func serveIMDS(t *testing.T, f *fakeIMDS) notice.Config {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return notice.Config{Source: notice.SourceAWS, Endpoint: srv.URL, Interval: time.Second}
}

func TestAWSNoNoticeAsksWithOneToken(t *testing.T) {
	f := &fakeIMDS{}
	found, clock := watch(t, serveIMDS(t, f), 5)
	if len(found) != 0 {
		t.Fatalf("found %v, want no notice", found)
	}
	if f.polls != 5 || len(f.tokens) != 1 || f.badAuth != 0 {
		t.Errorf("polls %d, tokens %d, refused %d; want 5 polls with one token, none refused", f.polls, len(f.tokens), f.badAuth)
	}
	if f.ttls[0] != "21600" {
		t.Errorf("token TTL header %q, want 21600", f.ttls[0])
	}
	if clock.Waits()[0] != time.Second {
		t.Errorf("waited %s between polls, want the configured 1s", clock.Waits()[0])
	}
}

func TestAWSSpotInterruption(t *testing.T) {
	f := &fakeIMDS{spotFrom: 3, spotBody: `{"action":"terminate","time":"2026-11-30T11:02:00Z"}`}
	found, clock := watch(t, serveIMDS(t, f), 100)
	want := []notice.Notice{{
		Kind: notice.KindSpotInterruption, Source: notice.SourceAWS,
		At:       time.Date(2026, 11, 30, 11, 0, 2, 0, time.UTC), // heard at the third poll
		Deadline: time.Date(2026, 11, 30, 11, 2, 0, 0, time.UTC),
	}}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	if len(clock.Waits()) != 2 {
		t.Errorf("waited %d times, want 2: the watch ends once the node is known to go", len(clock.Waits()))
	}
}

func TestAWSRebalanceOnceThenSpot(t *testing.T) {
	f := &fakeIMDS{rebalanceFrom: 2, spotFrom: 5, spotBody: `{"action":"stop","time":"2026-11-30T11:02:00Z"}`}
	found, _ := watch(t, serveIMDS(t, f), 100)
	var kinds []string
	for _, n := range found {
		kinds = append(kinds, n.Kind)
	}
	if diff := cmp.Diff([]string{notice.KindRebalance, notice.KindSpotInterruption}, kinds); diff != "" {
		t.Fatalf("kinds (-want +got):\n%s", diff)
	}
	if !found[0].Deadline.IsZero() || found[0].Ends() {
		t.Errorf("rebalance %+v: want no deadline, and it ends nothing", found[0])
	}
	if !found[1].Ends() {
		t.Errorf("spot interruption %+v does not end the node", found[1])
	}
}

func TestAWSRevokedTokenIsRenewed(t *testing.T) {
	f := &fakeIMDS{revokeAt: 3, spotFrom: 4, spotBody: `{"action":"terminate","time":"2026-11-30T11:02:00Z"}`}
	found, _ := watch(t, serveIMDS(t, f), 100)
	if len(found) != 1 || found[0].Kind != notice.KindSpotInterruption {
		t.Fatalf("found %v, want the spot interruption", found)
	}
	if len(f.tokens) != 2 {
		t.Errorf("got %d tokens, want 2: a refused token is replaced at once", len(f.tokens))
	}
}

func TestAWSTokenRenewedBeforeItEnds(t *testing.T) {
	f := &fakeIMDS{}
	cfg := serveIMDS(t, f)
	cfg.Interval = time.Hour
	watch(t, cfg, 8) // 8 polls an hour apart: 7 hours
	if len(f.tokens) != 2 || f.badAuth != 0 {
		t.Errorf("tokens %d, refused %d; want a second token before the 6h one ends, none refused", len(f.tokens), f.badAuth)
	}
}

func TestAWSErrorsAreRetried(t *testing.T) {
	f := &fakeIMDS{failPolls: map[int]bool{1: true, 2: true}, spotFrom: 1, spotBody: `{"action":"terminate","time":"2026-11-30T11:02:00Z"}`}
	found, _ := watch(t, serveIMDS(t, f), 100)
	if len(found) != 1 || f.polls != 3 {
		t.Errorf("found %v after %d polls, want the notice at the third poll after two errors", found, f.polls)
	}
}

func TestAWSUnreachableIsRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	found, clock := watch(t, notice.Config{Source: notice.SourceAWS, Endpoint: url}, 4)
	if len(found) != 0 || len(clock.Waits()) != 4 || clock.Waits()[0] != notice.DefaultInterval {
		t.Errorf("found %v, waits %v; want no notice and a retry every %s", found, clock.Waits(), notice.DefaultInterval)
	}
}

func TestAWSUnreadableNotices(t *testing.T) {
	for _, tc := range []struct {
		body     string
		want     int
		deadline bool
	}{
		{body: `not json`, want: 0},
		{body: `{"action":"terminate","time":"soon"}`, want: 1},
		{body: `{"action":"terminate"}`, want: 1},
	} {
		f := &fakeIMDS{spotFrom: 1, spotBody: tc.body}
		found, _ := watch(t, serveIMDS(t, f), 3)
		if len(found) != tc.want {
			t.Errorf("body %q: found %v, want %d notices", tc.body, found, tc.want)
			continue
		}
		if tc.want == 1 && !found[0].Deadline.IsZero() {
			t.Errorf("body %q: deadline %s, want none", tc.body, found[0].Deadline)
		}
	}
}
