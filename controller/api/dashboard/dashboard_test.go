package dashboard

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sortie/controller/api"
	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/strategy"
)

type testDash struct {
	*httptest.Server
	svc    *service.Service
	d      *Dashboard
	tokens map[string]string
}

// newTestDash serves the API and the dashboard of a fresh home, as
// `sortie server` does, with users alice, bob and root (an admin).
func newTestDash(t *testing.T, o Options) *testDash {
	t.Helper()
	ctx := context.Background()
	h := t.TempDir()
	svc, err := service.Open(ctx, h, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	up := &api.Uploads{Dir: filepath.Join(h, "uploads")}
	api.ForServer(svc, up, nil)
	td := &testDash{svc: svc, tokens: map[string]string{}}
	for _, u := range []struct {
		name  string
		admin bool
	}{{"alice", false}, {"bob", false}, {"root", true}} {
		tok, hash, err := api.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Store.AddUser(ctx, u.name, hash, u.admin); err != nil {
			t.Fatal(err)
		}
		td.tokens[u.name] = tok
	}
	o.Service = func(a *contract.Asker) Service { return svc.As(a) }
	o.Auth = api.TokenAuth(svc.Store)
	if o.Now == nil {
		o.Now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	}
	td.d, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	td.Server = httptest.NewServer(Mount(api.NewServer(api.Options{Service: svc, Store: svc.Store, Uploads: up}), td.d))
	t.Cleanup(td.Close)
	if o.Origins == nil {
		origins, err := Origins("", td.Listener.Addr(), false)
		if err != nil {
			t.Fatal(err)
		}
		td.d.Serving(origins)
	}
	return td
}

// launch stores a job of user's, as a launch through the API does.
func (td *testDash) launch(t *testing.T, user, name string) int64 {
	t.Helper()
	svc := *td.svc
	svc.Asker = &contract.Asker{Name: user}
	j, err := svc.Launch(context.Background(), contract.LaunchRequest{File: "t.yaml", Name: name, Task: []byte("run: 'true'\nresources: {cloud: sim}\n")})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// fail ends a job's first attempt with exit code 3 and the job FAILED,
// as the controller does.
func (td *testDash) fail(t *testing.T, id int64) { td.failAttempts(t, id, 1) }

// failAttempts ends n attempts of a job's first task with exit code 3:
// each is restarted but the last, which fails the job.
func (td *testDash) failAttempts(t *testing.T, id int64, n int) {
	t.Helper()
	ctx := context.Background()
	st := td.svc.Store
	for i := 1; i <= n; i++ {
		status := lifecycle.Starting
		if i > 1 {
			status = lifecycle.Recovering
		}
		a, err := st.NewAttempt(ctx, id, 0, func(int) string { return "c" }, nil, status)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.MarkLaunched(ctx, a.ID, "sim", "sim-1", "sim-1a", []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkRunning(ctx, a); err != nil {
			t.Fatal(err)
		}
		d := strategy.Decision{Action: strategy.Restart, Reason: fmt.Sprintf("restart %d/%d on errors", i, n-1),
			Counters: strategy.Counters{RestartsOnErrors: i}}
		if i == n {
			d = strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: fmt.Sprintf("restart %d/%d on errors: budget spent", i, n-1),
				Counters: strategy.Counters{RestartsOnErrors: i}}
		}
		three := 3
		if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&three}, Reason: "node 0 exited 3"},
			d, store.Facts{}); err != nil {
			t.Fatal(err)
		}
	}
}

// do sends a request as user ("" without a session), following no
// redirect, with the headers given as name, value pairs, and returns the
// answer and its body.
func (td *testDash) do(t *testing.T, user, method, path string, form url.Values, headers ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, td.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if user != "" {
		req.AddCookie(&http.Cookie{Name: CookieName, Value: td.tokens[user]})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// post sends a form from the dashboard's own page, with user's CSRF token.
func (td *testDash) post(t *testing.T, user, path string, form url.Values) (*http.Response, string) {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrfToken(td.tokens[user]))
	return td.do(t, user, "POST", path, form, "Origin", td.URL)
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	return nil
}

// A ?token= link signs in: an HttpOnly, SameSite=Strict cookie, and a
// redirect to the same address without the token (its other parameters
// kept); a bad token signs no one in; a page without a session sends the
// browser to sign in, and the token form signs in too, never sending the
// browser off the site.
func TestSignIn(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")

	resp, _ := td.do(t, "", "GET", fmt.Sprintf("/jobs/%d?token=%s&x=1", id, url.QueryEscape(td.tokens["alice"])), nil)
	c := sessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || c == nil {
		t.Fatalf("a token link: %d, cookie %v", resp.StatusCode, c)
	}
	if loc := resp.Header.Get("Location"); loc != fmt.Sprintf("/jobs/%d?x=1", id) {
		t.Errorf("redirected to %q: the token must be dropped and the rest kept", loc)
	}
	if c.Value != td.tokens["alice"] || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" {
		t.Errorf("cookie %+v: want the token, HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/", c)
	}
	_, page := td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", id), nil)
	if !strings.Contains(page, `Signed in as <strong id="user">alice</strong>`) || !strings.Contains(page, "train") {
		t.Errorf("the job page signed in as alice:\n%s", page)
	}

	resp, page = td.do(t, "", "GET", "/?token=sortie_wrong", nil)
	if resp.StatusCode != http.StatusUnauthorized || sessionCookie(resp) != nil || !strings.Contains(page, "not one this server knows") {
		t.Errorf("a bad token: %d, cookie %v\n%s", resp.StatusCode, sessionCookie(resp), page)
	}
	if strings.Contains(page, "sortie_wrong") {
		t.Error("the sign-in page shows the bad token")
	}

	resp, _ = td.do(t, "", "GET", "/failures", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin?next=%2Ffailures" {
		t.Errorf("no session: %d to %q, want 303 to the sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = td.do(t, "", "GET", "/?partial=1", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a part of a page without a session: %d, want 401", resp.StatusCode)
	}

	form := url.Values{"token": {td.tokens["bob"]}, "next": {"/failures"}}
	resp, _ = td.do(t, "", "POST", "/signin", form, "Origin", td.URL)
	if c := sessionCookie(resp); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/failures" || c == nil || c.Value != td.tokens["bob"] {
		t.Errorf("the token form: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example"} {
		form.Set("next", next)
		resp, _ = td.do(t, "", "POST", "/signin", form, "Origin", td.URL)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("next=%q sent the browser to %q, want /", next, loc)
		}
	}
	form.Set("token", "")
	if resp, page := td.do(t, "", "POST", "/signin", form, "Origin", td.URL); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, `id="token-err"`) {
		t.Errorf("an empty token: %d\n%s", resp.StatusCode, page)
	}

	// Over TLS the cookie is Secure.
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/?token="+url.QueryEscape(td.tokens["alice"]), nil)
	r.TLS = &tls.ConnectionState{}
	td.d.ServeHTTP(rec, r)
	if c := sessionCookie(rec.Result()); c == nil || !c.Secure {
		t.Errorf("over TLS: cookie %+v, want Secure", c)
	}
}

// Every POST from a page needs the session's CSRF token and an Origin (or
// Referer) of this site: a forged request is refused and changes nothing;
// the owner check refuses bob's cancel of alice's job even with his own
// good token; alice's goes through.
func TestForgedRequestsAreRefused(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	path := fmt.Sprintf("/jobs/%d/cancel", id)
	good := csrfToken(td.tokens["alice"])
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers []string
		want    string
	}{
		{"no form token", url.Values{}, []string{"Origin", td.URL}, "form token is missing or wrong"},
		{"bob's form token", url.Values{"csrf": {csrfToken(td.tokens["bob"])}}, []string{"Origin", td.URL}, "form token is missing or wrong"},
		{"another site", url.Values{"csrf": {good}}, []string{"Origin", "http://evil.example"}, "came from another site"},
		{"another port", url.Values{"csrf": {good}}, []string{"Origin", "http://127.0.0.1:1"}, "came from another site"},
		{"another site's referer", url.Values{"csrf": {good}}, []string{"Referer", "http://evil.example/page"}, "came from another site"},
		{"no origin", url.Values{"csrf": {good}}, nil, "names no origin"},
	} {
		resp, page := td.do(t, "alice", "POST", path, tc.form, tc.headers...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, tc.want) {
			t.Errorf("%s: %d, want 403 saying %q\n%s", tc.name, resp.StatusCode, tc.want, page)
		}
	}
	if j, _ := td.svc.Store.Job(context.Background(), id); j.CancelRequested || j.Status != lifecycle.Pending {
		t.Fatalf("a refused request cancelled the job: %s", j.Status)
	}
	// The same page's Referer, without Origin, is this site.
	if resp, page := td.post(t, "bob", path, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "belongs to alice") {
		t.Errorf("bob's cancel of alice's job: %d\n%s", resp.StatusCode, page)
	}
	resp, _ := td.do(t, "alice", "POST", path, url.Values{"csrf": {good}}, "Referer", td.URL+fmt.Sprintf("/jobs/%d/cancel", id))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != fmt.Sprintf("/jobs/%d", id) {
		t.Fatalf("alice's cancel: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if j, _ := td.svc.Store.Job(context.Background(), id); j.CancelledBy != "alice" {
		t.Errorf("cancelled_by %q, want alice", j.CancelledBy)
	}
	// Signing out needs the form token too.
	if resp, _ := td.do(t, "alice", "POST", "/signout", url.Values{}, "Origin", td.URL); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a forged sign-out: %d", resp.StatusCode)
	}
	if resp, _ := td.post(t, "alice", "/signout", nil); resp.StatusCode != http.StatusSeeOther || sessionCookie(resp) == nil || sessionCookie(resp).MaxAge >= 0 {
		t.Errorf("sign out: %d, cookie %v: want it removed", resp.StatusCode, sessionCookie(resp))
	}
}

// What only the owner or an admin may do is offered to them alone.
func TestOwnerOnlyActionsAreOfferedToTheOwner(t *testing.T) {
	td := newTestDash(t, Options{})
	running := td.launch(t, "alice", "train")
	failed := td.launch(t, "alice", "eval")
	td.fail(t, failed)
	for _, tc := range []struct {
		user   string
		offers bool
	}{{"alice", true}, {"root", true}, {"bob", false}} {
		_, page := td.do(t, tc.user, "GET", fmt.Sprintf("/jobs/%d", running), nil)
		if got := strings.Contains(page, `id="cancel"`); got != tc.offers {
			t.Errorf("%s sees a cancel button on alice's running job: %t, want %t", tc.user, got, tc.offers)
		}
		_, page = td.do(t, tc.user, "GET", fmt.Sprintf("/jobs/%d", failed), nil)
		if got := strings.Contains(page, `id="retry-form"`); got != tc.offers {
			t.Errorf("%s sees the retry form on alice's failed job: %t, want %t", tc.user, got, tc.offers)
		}
		if strings.Contains(page, `id="cancel"`) {
			t.Errorf("%s sees a cancel button on an ended job", tc.user)
		}
		_, page = td.do(t, tc.user, "GET", "/failures", nil)
		if got := strings.Contains(page, "Forget the failure of job"); got != tc.offers {
			t.Errorf("%s may forget alice's failure: %t, want %t", tc.user, got, tc.offers)
		}
	}
	if resp, page := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d/cancel", running), nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "belongs to alice") {
		t.Errorf("bob's cancel confirmation: %d", resp.StatusCode)
	}
}

var rowID = regexp.MustCompile(`<tr id="job-(\d+)"`)

func rows(page string) []string {
	var out []string
	for _, m := range rowID.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// The queue is paginated by a cursor: each page shows PageSize jobs,
// newest first, and links the older ones; the pages together are the
// queue; its live part is the table alone, of the same page.
func TestQueuePages(t *testing.T) {
	td := newTestDash(t, Options{PageSize: 4})
	for i := range 10 {
		td.launch(t, "alice", fmt.Sprintf("job-%d", i))
	}
	var seen []string
	next := "/"
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("more than 3 pages of 4 for 10 jobs")
		}
		resp, page := td.do(t, "bob", "GET", next, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d\n%s", next, resp.StatusCode, page)
		}
		got := rows(page)
		if len(got) > 4 {
			t.Fatalf("%s: %d jobs, over the page size", next, len(got))
		}
		seen = append(seen, got...)
		next = ""
		if m := regexp.MustCompile(`href="([^"]+)" id="page-older"`).FindStringSubmatch(page); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		if pages > 0 && !strings.Contains(page, `id="page-newest"`) {
			t.Errorf("page %d links no way back to the newest", pages+1)
		}
	}
	if want := "[10 9 8 7 6 5 4 3 2 1]"; fmt.Sprint(seen) != want {
		t.Errorf("the pages listed %v, want %s", seen, want)
	}
	resp, part := td.do(t, "bob", "GET", "/?before=5&partial=1", nil)
	if resp.StatusCode != 200 || strings.Contains(part, "<html") || fmt.Sprint(rows(part)) != "[4 3 2 1]" {
		t.Errorf("the live part of the third page: %d %v\n%s", resp.StatusCode, rows(part), part)
	}
	_, page := td.do(t, "bob", "GET", "/?name=job-3&owner=alice", nil)
	if fmt.Sprint(rows(page)) != "[4]" {
		t.Errorf("filtered by name and owner: %v", rows(page))
	}
	resp, page = td.do(t, "bob", "GET", "/?status=NOPE", nil)
	if resp.StatusCode != 400 || !strings.Contains(page, `id="f-status-err"`) || !strings.Contains(page, `&#34;NOPE&#34; is not a job status`) {
		t.Errorf("a bad status: %d\n%s", resp.StatusCode, page)
	}
	if resp, _ := td.do(t, "bob", "GET", "/?before=x", nil); resp.StatusCode != 400 {
		t.Errorf("a bad cursor: %d", resp.StatusCode)
	}
}

// A retry from the form is the CLI's retry: the reason is required and
// said by its field; a bad override is the schema's problem, by the
// overrides; a good one makes the linked job and goes to it.
func TestRetryForm(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	td.fail(t, id)
	path := fmt.Sprintf("/jobs/%d/retry", id)

	resp, page := td.post(t, "alice", path, url.Values{"reason": {"  "}, "sets": {"resources.memory=32"}})
	if resp.StatusCode != 400 || !strings.Contains(page, `id="r-reason-err"`) || !strings.Contains(page, "--reason is required") ||
		!strings.Contains(page, "resources.memory=32</textarea>") {
		t.Errorf("no reason: %d\n%s", resp.StatusCode, page)
	}
	resp, page = td.post(t, "alice", path, url.Values{"reason": {"flaky"}, "sets": {"resources.memory=lots\nnonsense"}})
	if resp.StatusCode != 422 || !strings.Contains(page, `id="r-sets-err"`) || !strings.Contains(page, "resources.memory") ||
		!strings.Contains(page, "is not an assignment") {
		t.Errorf("bad overrides: %d\n%s", resp.StatusCode, page)
	}
	if jobs, _ := td.svc.Store.Jobs(context.Background(), store.JobFilter{}); len(jobs) != 1 {
		t.Fatalf("a refused retry made a job: %d jobs", len(jobs))
	}
	resp, _ = td.post(t, "alice", path, url.Values{"reason": {"flaky disk"}, "sets": {"resources.memory=32\r\n\r\nenvs.SEED=2\r\n"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("retry: %d", resp.StatusCode)
	}
	var newID int64
	if _, err := fmt.Sscanf(resp.Header.Get("Location"), "/jobs/%d", &newID); err != nil || newID == id {
		t.Fatalf("retry went to %q", resp.Header.Get("Location"))
	}
	d, err := td.svc.Show(context.Background(), newID)
	if err != nil {
		t.Fatal(err)
	}
	if d.RetryOf == nil || *d.RetryOf != id || deref(d.RetryReason) != "flaky disk" || deref(d.RequestedBy) != "alice" || len(d.Overrides) != 2 {
		t.Fatalf("the retry: %+v", d.JobView)
	}
	_, page = td.do(t, "alice", "GET", resp.Header.Get("Location"), nil)
	if !strings.Contains(page, fmt.Sprintf(`<a href="/jobs/%d" id="retry-of">job %d</a>`, id, id)) || !strings.Contains(page, "resources.memory: (unset) → 32") {
		t.Errorf("the retry's page links its original and shows the override:\n%s", page)
	}
}

// The job page shows each attempt with its placement, per-node exit
// codes, how it ended and the decision; its log is the API's stream.
func TestJobPage(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	td.fail(t, id)
	_, page := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d", id), nil)
	for _, want := range []string{`id="attempt-0-1"`, "sim/sim-1/sim-1a", `<dd id="resources">1x[default]</dd>`, `<dd id="location">sim/sim-1a</dd>`, "node 0: <strong>3</strong>", "node 0 exited 3",
		"<strong>fail</strong>: restart 1/0 on errors: budget spent", `class="status s-bad"`, "FAILED", "restarts on error left "} {
		if !strings.Contains(page, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	// The parts a script refreshes are the job's summary, marked final
	// once the job has ended, and its attempts.
	resp, part := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d?partial=1", id), nil)
	if resp.StatusCode != 200 || strings.Contains(part, "<html") || !strings.Contains(part, "data-final-now") || strings.Contains(part, `id="attempt-0-1"`) {
		t.Errorf("the job page's live summary: %d\n%s", resp.StatusCode, part)
	}
	resp, part = td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d?partial=more", id), nil)
	if resp.StatusCode != 200 || strings.Contains(part, "<html") || !strings.Contains(part, `id="attempt-0-1"`) {
		t.Errorf("the job page's live attempts: %d\n%s", resp.StatusCode, part)
	}
	resp, body := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d/logs", id), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("logs: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	var last contract.LogEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.End == nil {
		t.Fatalf("the stream's last line %q: %v", lines[len(lines)-1], err)
	}
	resp, body = td.do(t, "bob", "GET", "/jobs/999/logs", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("the log of no job: %d %s", resp.StatusCode, body)
	}
	if resp, _ := td.do(t, "bob", "GET", "/jobs/999", nil); resp.StatusCode != 404 {
		t.Errorf("no such job: %d", resp.StatusCode)
	}
}

// Beside the dashboard the API keeps its routes and its JSON 404 for
// unknown /v1/ paths; an unknown page is the dashboard's 404 page; every
// page forbids framing and other sites' scripts.
func TestMount(t *testing.T) {
	td := newTestDash(t, Options{})
	resp, body := td.do(t, "", "GET", "/v1/nope", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, `"no_route"`) {
		t.Errorf("/v1/nope: %d %s", resp.StatusCode, body)
	}
	if resp, _ := td.do(t, "", "GET", "/v1/healthz", nil); resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
	resp, body = td.do(t, "bob", "GET", "/nope", nil)
	if resp.StatusCode != 404 || !strings.Contains(body, "There is no page at /nope") {
		t.Errorf("/nope: %d\n%s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	for _, f := range []string{"/static/style.css", "/static/dashboard.js"} {
		if resp, body := td.do(t, "", "GET", f, nil); resp.StatusCode != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", f, resp.StatusCode, len(body))
		}
	}
}

// `sortie dashboard`'s one token signs in its one user; any other is
// refused.
func TestOneToken(t *testing.T) {
	me := &contract.Asker{Name: "me", Admin: true}
	auth := OneToken("sortie_abc", me)
	if a, err := auth(context.Background(), "sortie_abc"); err != nil || a != me {
		t.Errorf("the token: %v %v", a, err)
	}
	for _, bad := range []string{"", "sortie_ab", "sortie_abcd"} {
		if _, err := auth(context.Background(), bad); err == nil {
			t.Errorf("%q signed in", bad)
		}
	}
	if _, err := OneToken("", me)(context.Background(), ""); err == nil {
		t.Error("an empty token signed in")
	}
}

// Only a refused token signs out: a store that cannot be asked is an
// error of its own, and the session cookie stays.
func TestSignInErrorsThatAreNotRefusals(t *testing.T) {
	for _, tc := range []struct {
		err     error
		status  int
		signOut bool
	}{
		{&httpErr{status: http.StatusUnauthorized, msg: "revoked"}, http.StatusUnauthorized, true},
		{fmt.Errorf("read users: %w", store.ErrBusy), http.StatusServiceUnavailable, false},
	} {
		d, err := New(Options{Auth: func(context.Context, string) (*contract.Asker, error) { return nil, tc.err }})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: CookieName, Value: "sortie_x"})
		d.ServeHTTP(rec, r)
		c := sessionCookie(rec.Result())
		if rec.Code != tc.status || (c != nil) != tc.signOut {
			t.Errorf("%v: %d, cookie %v; want %d, signed out %t", tc.err, rec.Code, c, tc.status, tc.signOut)
		}
	}
}

// A failed job's page puts its log and the retry form before the
// attempts: the newest attempt first, the ones before it folded away.
func TestFailedJobPageShowsLogAndRetryFirst(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	one := td.launch(t, "alice", "once")
	td.failAttempts(t, id, 4)
	_, page := td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", id), nil)
	at := func(s string) int {
		t.Helper()
		i := strings.Index(page, s)
		if i < 0 {
			t.Fatalf("the page lacks %q:\n%s", s, page)
		}
		return i
	}
	logAt, retryAt, attemptsAt := at(`<pre id="log"`), at(`id="retry-form"`), at(`id="attempts-h"`)
	if logAt > attemptsAt || retryAt > attemptsAt {
		t.Errorf("the log (at %d) and the retry form (at %d) come after the attempts (at %d)", logAt, retryAt, attemptsAt)
	}
	newest, folded := at(`id="attempt-0-4"`), at(`<details id="older-attempts">`)
	foldEnd := folded + strings.Index(page[folded:], "</details>")
	if newest > folded {
		t.Errorf("the newest attempt is after the earlier ones")
	}
	for n := 1; n <= 3; n++ {
		if i := at(fmt.Sprintf(`id="attempt-0-%d"`, n)); i < folded || i > foldEnd {
			t.Errorf("attempt %d is not folded", n)
		}
	}
	if !strings.Contains(page[folded:foldEnd], "<summary>3 earlier attempts</summary>") {
		t.Errorf("the fold does not say what it holds:\n%s", page[folded:foldEnd])
	}
	// A job of one attempt has nothing to fold.
	td.fail(t, one)
	if _, page := td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", one), nil); strings.Contains(page, "<details") || !strings.Contains(page, `id="attempt-0-1"`) {
		t.Errorf("a job of one attempt:\n%s", page)
	}
}

var (
	tableRE = regexp.MustCompile(`(?s)<table id="tasks">.*?</table>`)
	rowRE   = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRE  = regexp.MustCompile(`(?s)<t([hd])([^>]*)>`)
)

// The pipeline's Tasks table aligns each column's header as its cells:
// the numbers, and their headers, to the right.
func TestPipelineTasksTableAlignsNumbers(t *testing.T) {
	td := newTestDash(t, Options{})
	svc := *td.svc
	svc.Asker = &contract.Asker{Name: "alice"}
	j, err := svc.Launch(context.Background(), contract.LaunchRequest{File: "p.yaml",
		Task: []byte("name: a\nrun: 'true'\nresources: {cloud: sim}\n---\nname: b\nrun: 'true'\nresources: {cloud: sim}\n")})
	if err != nil {
		t.Fatal(err)
	}
	_, page := td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", j.ID), nil)
	table := tableRE.FindString(page)
	if table == "" {
		t.Fatalf("no Tasks table:\n%s", page)
	}
	var header []string
	for _, r := range rowRE.FindAllStringSubmatch(table, -1) {
		var classes []string
		for _, c := range cellRE.FindAllStringSubmatch(r[1], -1) {
			classes = append(classes, fmt.Sprint(strings.Contains(c[2], `class="num"`)))
		}
		if header == nil {
			header = classes
			continue
		}
		if fmt.Sprint(classes) != fmt.Sprint(header) {
			t.Errorf("a row's cells are aligned %v, its headers %v", classes, header)
		}
	}
	if fmt.Sprint(header) != "[true false false true true true]" {
		t.Errorf("the headers Task, Name, Status, Recoveries, Failures, Budget are right-aligned %v", header)
	}
	css, err := staticFS.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`th\.num[^{]*\{[^}]*text-align: right`).Match(css) {
		t.Error("style.css does not right-align th.num")
	}
}

// The known failures name the job that failed and its task.
func TestFailuresPageNamesJobAndTask(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "eval-seed")
	td.fail(t, id)
	_, page := td.do(t, "bob", "GET", "/failures", nil)
	row := regexp.MustCompile(`(?s)<tr id="failure-[0-9a-f]+">.*?</tr>`).FindString(page)
	for _, want := range []string{fmt.Sprintf(`<a href="/jobs/%d">%d</a> <span class="name">eval-seed</span>`, id, id), `<td class="task">0</td>`} {
		if !strings.Contains(row, want) {
			t.Errorf("the failure's row lacks %q:\n%s", want, row)
		}
	}
}

// The queue shows what each job asks for and where it runs, as `jobs
// queue` does, and aligns its numbers under their header.
func TestQueueShowsResourcesAndLocation(t *testing.T) {
	td := newTestDash(t, Options{})
	placed := td.launch(t, "alice", "train")
	td.fail(t, placed)
	svc := *td.svc
	svc.Asker = &contract.Asker{Name: "alice"}
	waiting, err := svc.Launch(context.Background(), contract.LaunchRequest{File: "t.yaml", Name: "big",
		Task: []byte("num_nodes: 2\nrun: 'true'\nresources: {cloud: sim, accelerators: A100:8}\n")})
	if err != nil {
		t.Fatal(err)
	}
	_, page := td.do(t, "bob", "GET", "/", nil)
	for _, want := range []string{
		`<th scope="col">Resources</th><th scope="col">Location</th>`, `<th scope="col" class="num" title="Recoveries">#Rec.</th>`,
		fmt.Sprintf(`<tr id="job-%d" data-status="FAILED">`, placed), `<td class="resources">1x[default]</td>` + "\n    <td>sim/sim-1a</td>",
		fmt.Sprintf(`<tr id="job-%d" data-status="PENDING">`, waiting.ID), `<td class="resources">2x[A100:8]</td>` + "\n    <td>-</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue lacks %q", want)
		}
	}
}

// A job admission holds back says why, on its page and on hover of its
// status in the queue, as `jobs show` and the queue do.
func TestWaitingJobSaysWhy(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	const why = "waiting: the server runs 3 of 3 jobs (server limit); 1 job ahead of this one"
	if _, err := td.svc.Store.Admit(context.Background(), time.Time{}, func(store.AdmissionFacts) []strategy.Placed {
		return []strategy.Placed{{ID: id, Place: 2, Reason: why}}
	}); err != nil {
		t.Fatal(err)
	}
	want := "#2 the server runs 3 of 3 jobs (server limit); 1 job ahead of this one"
	if _, page := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d", id), nil); !strings.Contains(page, `<dd id="waiting">`+want+`</dd>`) {
		t.Errorf("the job page does not say why the job waits (%q):\n%s", want, page)
	}
	if _, page := td.do(t, "bob", "GET", "/", nil); !strings.Contains(page, `role="tooltip">waiting: `+want+`</span>`) {
		t.Errorf("the queue does not say why the job waits (%q):\n%s", want, page)
	}
}

// A job asked to make room for one of higher priority says so on its page.
func TestPreemptedJobSaysForWhom(t *testing.T) {
	td := newTestDash(t, Options{})
	low, high := td.launch(t, "alice", "low"), td.launch(t, "bob", "high")
	ctx := context.Background()
	for _, placed := range [][]strategy.Placed{
		{{ID: low, Admit: true}, {ID: high, Place: 1, Reason: "waiting: the server runs 1 of 1 jobs (server limit); this job is next"}},
		{{ID: high, Place: 1, Reason: "waiting: preempting job 1 (priority 100) for room under the server limit", Preempt: []int64{low}}},
	} {
		if _, err := td.svc.Store.Admit(ctx, time.Time{}, func(store.AdmissionFacts) []strategy.Placed { return placed }); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf(`<dd id="preempted-for">for <a href="/jobs/%d">job %d</a>, of higher priority`, high, high)
	if _, page := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d", low), nil); !strings.Contains(page, want) {
		t.Errorf("the page of a job being preempted lacks %q:\n%s", want, page)
	}
}
