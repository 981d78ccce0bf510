package smoke_tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"context"

	"github.com/chromedp/chromedp"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// open goes to the server's page path signed in with tok, through the
// ?token= link users are given, and checks that the link's token is gone
// from the address once the page shows.
func open(t *testing.T, ctx context.Context, s *server, tok, path string) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+path+sep+"token="+url.QueryEscape(tok)), chromedp.WaitVisible(chromedp.ID("user"))); err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "token") || loc != s.url+path {
		t.Fatalf("signed in, the address is %q: want %q, without the token", loc, s.url+path)
	}
}

// text is the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// until waits until the JavaScript expression is truthy and returns its
// value.
func until[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return v
}

// fill sets the value of the form field whose id is id.
func fill(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	js, _ := json.Marshal(value)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.getElementById(%q).value = %s; return true; })()`, id, js))); err != nil {
		t.Fatalf("fill %s: %v", id, err)
	}
}

// The queue page shows a job launched through the CLI and follows its
// status as it changes, without a reload.
func TestDashboardQueueFollowsAJob(t *testing.T) {
	s := startServer(t)
	alice, tok := s.user("alice", false)
	ctx := browser(t, 3*time.Minute)
	open(t, ctx, s, tok, "/")
	if got := text(t, ctx, "#user"); got != "alice" {
		t.Fatalf("signed in as %q, want alice", got)
	}
	// A reload would lose this.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](`window.sortieSamePage = "yes"`)(ctx, tg)
		return err
	})); err != nil {
		t.Fatal(err)
	}
	id := alice.launch(alice.write("slow.yaml", "name: slow\nresources: {cloud: local}\nrun: sleep 8; echo done\n"))
	first := until[string](t, ctx, "the job in the queue", fmt.Sprintf(`(document.querySelector('#job-%d') || {dataset: {}}).dataset.status`, id))
	if first == string(lifecycle.Succeeded) {
		t.Fatalf("the job showed first as %s: the test needs to see it change", first)
	}
	screenshot(t, ctx, "queue")
	until[bool](t, ctx, "the job to show SUCCEEDED", fmt.Sprintf(`document.querySelector('#job-%d')?.dataset.status === 'SUCCEEDED'`, id))
	if got := text(t, ctx, fmt.Sprintf("#job-%d .codes", id)); got != "0" {
		t.Errorf("exit codes %q, want 0", got)
	}
	same, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.sortieSamePage || "reloaded"`))
	if err != nil || same != "yes" {
		t.Fatalf("the page was reloaded (%q, %v): it must update in place", same, err)
	}
}

// A job's page shows its two attempts: where each ran, each node's exit
// code, how it ended and the decision with its rule; and their logs.
func TestDashboardJobPageShowsAttempts(t *testing.T) {
	s := startServer(t)
	alice, tok := s.user("alice", false)
	id := alice.launch(alice.write("flaky.yaml", "name: flaky\nresources: {cloud: local, job_recovery: {recover_on_exit_codes: [29]}}\n"+
		"run: echo this is attempt $SORTIE_ATTEMPT; if [ \"$SORTIE_ATTEMPT\" = 1 ]; then exit 29; fi; echo the second try\n"))
	alice.waitStatus(id, lifecycle.Succeeded)
	ctx := browser(t, 3*time.Minute)
	open(t, ctx, s, tok, fmt.Sprintf("/jobs/%d", id))
	// The attempt before the newest is folded away until asked for.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#older-attempts summary"))); err != nil {
		t.Fatal(err)
	}
	a1, a2 := text(t, ctx, "#attempt-0-1"), text(t, ctx, "#attempt-0-2")
	for _, want := range []string{"Attempt 1", "local/local", "node 0: 29", "user_failure", "restart", "exit code 29 matched recover_on_exit_codes [29]"} {
		if !strings.Contains(a1, want) {
			t.Errorf("attempt 1 lacks %q:\n%s", want, a1)
		}
	}
	for _, want := range []string{"Attempt 2", "node 0: 0", "succeeded", "succeed"} {
		if !strings.Contains(a2, want) {
			t.Errorf("attempt 2 lacks %q:\n%s", want, a2)
		}
	}
	if got := text(t, ctx, "#job h1 .status"); got != "SUCCEEDED" {
		t.Errorf("the job's status %q", got)
	}
	until[bool](t, ctx, "the newest attempt's log", `document.getElementById('log').textContent.includes('the second try')`)
	screenshot(t, ctx, "job")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#attempt-0-1 button"))); err != nil {
		t.Fatal(err)
	}
	until[bool](t, ctx, "attempt 1's log", `document.getElementById('log').textContent.includes('this is attempt 1') && !document.getElementById('log').textContent.includes('the second try')`)
}

// A job that failed four times shows, on a laptop's first screen without
// scrolling, its newest attempt's log and the retry form; the attempts
// before the newest are folded below them.
func TestDashboardFailedJobShowsLogAndRetryOnTheFirstScreen(t *testing.T) {
	s := startServerIn(t, newEnv(t, "SORTIE_RESTART_BACKOFF_INITIAL=10ms", "SORTIE_RESTART_BACKOFF_MAX=10ms"))
	alice, tok := s.user("alice", false)
	id := alice.launch(alice.write("four.yaml", "name: four\nresources: {cloud: local, job_recovery: {max_restarts_on_errors: 3}}\n"+
		"run: echo attempt $SORTIE_ATTEMPT fails; exit 3\n"))
	if d := alice.waitStatus(id, lifecycle.Failed); len(d.Attempts) != 4 {
		t.Fatalf("%d attempts, want 4", len(d.Attempts))
	}
	ctx := browser(t, 3*time.Minute)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1366, 900)); err != nil {
		t.Fatal(err)
	}
	open(t, ctx, s, tok, fmt.Sprintf("/jobs/%d", id))
	until[bool](t, ctx, "the newest attempt's log", `document.getElementById('log').textContent.includes('attempt 4 fails')`)
	inView := until[string](t, ctx, "the page laid out", `(() => {
		if (window.innerWidth !== 1366 || window.innerHeight !== 900) return "";
		const out = [];
		for (const id of ["log", "retry-form", "r-reason", "retry"]) {
			const r = document.getElementById(id).getBoundingClientRect();
			if (window.scrollY !== 0 || r.top < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth)
				out.push(id + " at " + Math.round(r.top) + "-" + Math.round(r.bottom));
		}
		return out.length ? "out of view: " + out.join(", ") : "in view";
	})()`)
	screenshot(t, ctx, "failed-job")
	if inView != "in view" {
		t.Errorf("in a 1366x900 window, %s", inView)
	}
	folded, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const d = document.getElementById('older-attempts');
		return d && !d.open ? Array.from(d.querySelectorAll('li.attempt'), a => a.id).join(' ') : "";
	})()`))
	if err != nil || folded != "attempt-0-1 attempt-0-2 attempt-0-3" {
		t.Errorf("folded attempts %q (%v), want the three before the newest", folded, err)
	}
}

// A retry from the job's page: the server's problems show by their
// fields, and a retry with a reason and an override makes the new job,
// linked to the first, and goes to it; the override is what it runs.
// The known failure the first job left is listed, and forgotten.
func TestDashboardRetryWithReasonAndOverride(t *testing.T) {
	s := startServer(t)
	alice, tok := s.user("alice", false)
	id := alice.launch(alice.write("eval.yaml", "name: eval\nenvs: {SEED: 1}\nresources: {cloud: local}\nrun: echo seed is $SEED; exit 3\n"))
	alice.waitStatus(id, lifecycle.Failed)
	ctx := browser(t, 3*time.Minute)

	// The status's reason shows when it has the keyboard's focus.
	open(t, ctx, s, tok, "/")
	width := until[float64](t, ctx, "the reason on focus", fmt.Sprintf(`(() => { const s = document.querySelector('#job-%d .status'); s.focus();
		return document.activeElement === s && s.querySelector('.reason').getBoundingClientRect().width; })()`, id))
	if width < 40 {
		t.Errorf("the focused status's reason is %.0f px wide: it must show", width)
	}

	open(t, ctx, s, tok, fmt.Sprintf("/jobs/%d", id))
	submit := func(reason, sets string) int64 {
		t.Helper()
		fill(t, ctx, "r-reason", reason)
		fill(t, ctx, "r-sets", sets)
		resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("retry")))
		if err != nil {
			t.Fatalf("submit the retry: %v", err)
		}
		return resp.Status
	}
	if st := submit("", "envs.SEED=2"); st != http.StatusBadRequest {
		t.Errorf("no reason: HTTP %d", st)
	}
	if got := text(t, ctx, "#r-reason-err"); !strings.Contains(got, "--reason is required") {
		t.Errorf("the reason's problem: %q", got)
	}
	if st := submit("flaky disk", "resources.memory=lots"); st != http.StatusUnprocessableEntity {
		t.Errorf("a bad override: HTTP %d", st)
	}
	// The field with the problem has the focus, so it is in view and read out.
	if focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); err != nil || focused != "r-sets" {
		t.Errorf("the focus is on %q (%v), want the overrides' field", focused, err)
	}
	screenshot(t, ctx, "retry-problem")
	if got := text(t, ctx, "#r-sets-err"); !strings.Contains(got, "resources.memory") {
		t.Errorf("the override's problem: %q", got)
	}
	if st := submit("flaky disk", "envs.SEED=2"); st != http.StatusOK {
		t.Errorf("the retry: HTTP %d", st)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	retry, err := strconv.ParseInt(strings.TrimPrefix(loc, s.url+"/jobs/"), 10, 64)
	if err != nil || retry == id {
		t.Fatalf("the retry went to %q, want the new job's page", loc)
	}
	if got := text(t, ctx, "#retry-of"); got != fmt.Sprintf("job %d", id) {
		t.Errorf("retry of %q", got)
	}
	if got := text(t, ctx, "#retry-reason"); got != "flaky disk" {
		t.Errorf("retry reason %q", got)
	}
	d := alice.waitStatus(retry, lifecycle.Failed)
	if d.RetryOf == nil || *d.RetryOf != id || d.RequestedBy == nil || *d.RequestedBy != "alice" ||
		len(d.Overrides) != 1 || d.Overrides[0].Path != "envs.SEED" || d.Overrides[0].New != "2" {
		t.Fatalf("the retry as the CLI shows it: retry_of %v, requested_by %v, overrides %+v", d.RetryOf, d.RequestedBy, d.Overrides)
	}
	if logs := alice.must("jobs", "logs", strconv.FormatInt(retry, 10)); !strings.Contains(logs.stdout, "seed is 2") {
		t.Errorf("the retry ran without its override: %q", logs.stdout)
	}

	// Both jobs failed with their own inputs: two known failures; the
	// first job's is forgotten from the list.
	known := func() []contract.FailureView {
		var fs []contract.FailureView
		if err := json.Unmarshal([]byte(alice.must("jobs", "failures", "-o", "json").stdout), &fs); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	var key string
	for _, f := range known() {
		if f.JobID == id {
			key = f.InputKey
		}
	}
	if key == "" {
		t.Fatalf("no known failure of job %d: %+v", id, known())
	}
	open(t, ctx, s, tok, "/failures")
	screenshot(t, ctx, "failures")
	if resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf("#failure-%s button", key[:12])))); err != nil || resp.Status != 200 {
		t.Fatalf("forget: %v %v", resp, err)
	}
	if got := text(t, ctx, ".note"); !strings.Contains(got, "Forgot the failure "+key) {
		t.Errorf("after forget: %q", got)
	}
	if fs := known(); len(fs) != 1 || fs[0].JobID != retry {
		t.Errorf("known failures after forgetting job %d's: %+v, want the retry's alone", id, fs)
	}
}

// bob is not offered the cancel of alice's job, and the server refuses
// it to him anyway; a request forged by another site's page, in alice's
// own browser, is refused and cancels nothing; alice's cancel, confirmed,
// goes through.
func TestDashboardCancelIsTheOwners(t *testing.T) {
	s := startServer(t)
	alice, aliceTok := s.user("alice", false)
	_, bobTok := s.user("bob", false)
	id := alice.launch(alice.write("long.yaml", "name: long\nresources: {cloud: local}\nrun: sleep 300\n"))
	alice.waitStatus(id, lifecycle.Running)
	jobPath := fmt.Sprintf("/jobs/%d", id)
	ctx := browser(t, 3*time.Minute)

	open(t, ctx, s, bobTok, jobPath)
	if got := text(t, ctx, "#owner"); got != "alice" {
		t.Fatalf("owner %q", got)
	}
	if none, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('cancel') === null`)); err != nil || !none {
		t.Fatalf("bob is offered the cancel of alice's job (%v)", err)
	}
	// bob sends the cancel himself, with his own session's good form token.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`fetch('/jobs/%d/cancel', {method: 'POST',
		body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value})}).then(r => r.status)`, id), chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("bob's own cancel of alice's job: HTTP %d (%v), want 403", status, err)
	}

	// Another site's page (another port of 127.0.0.1: the same site to the
	// cookie, so only the Origin check and the form token stand in the way).
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>prize</title><form method="post" action="%s/jobs/%d/cancel">
			<input type="hidden" name="csrf" value="guessed"><button id="go">Claim your prize</button></form>`, s.url, id)
	}))
	defer evil.Close()
	// The browser is bob's: alice's link asks before it signs her in.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+jobPath+"?token="+url.QueryEscape(aliceTok)), chromedp.WaitVisible(chromedp.ID("switch-continue"))); err != nil {
		t.Fatalf("alice's link in bob's browser: %v", err)
	}
	if got := text(t, ctx, "#switch-who"); !strings.Contains(got, "You are signed in as bob; this link signs you in as alice") {
		t.Fatalf("the switch asks %q", got)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("switch-continue"))); err != nil {
		t.Fatal(err)
	}
	if who := text(t, ctx, "#user"); who != "alice" {
		t.Fatalf("after the switch, signed in as %q", who)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != s.url+jobPath {
		t.Fatalf("after the switch, at %q (%v), want %s", loc, err, s.url+jobPath)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.ID("go"))); err != nil {
		t.Fatal(err)
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("go")))
	if err != nil || resp.Status != http.StatusForbidden {
		t.Fatalf("the forged cancel: %v %v, want HTTP 403", resp, err)
	}
	if got := text(t, ctx, "main"); !strings.Contains(got, "came from another site") {
		t.Errorf("the refusal says %q", got)
	}
	if d := alice.show(id); d.Status != lifecycle.Running || d.CancelledBy != nil {
		t.Fatalf("a refused request touched the job: %s, cancelled by %v", d.Status, d.CancelledBy)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+jobPath), chromedp.WaitVisible(chromedp.ID("cancel"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("cancel"))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "cancel")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("confirm-cancel"))); err != nil {
		t.Fatal(err)
	}
	if d := alice.waitStatus(id, lifecycle.Cancelled); d.CancelledBy == nil || *d.CancelledBy != "alice" {
		t.Fatalf("cancelled by %v", d.CancelledBy)
	}
}

// `sortie dashboard` serves the home's dashboard on 127.0.0.1 to the
// home's own user: the link it prints signs in and the token leaves the
// address; another token signs no one in; SIGTERM stops it. A bad port
// is refused naming it. `server users add` prints each user's link.
func TestDashboardCommand(t *testing.T) {
	e := newEnv(t, "SORTIE_USER=carol")
	id := e.launch(e.write("hello.yaml", "name: hello\nresources: {cloud: local}\nrun: echo hi\n"))
	e.waitStatus(id, lifecycle.Succeeded)

	cmd := exec.Command(e.bin, "dashboard")
	cmd.Dir, cmd.Env = e.dir, e.environ()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var link string
	select {
	case link = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("sortie dashboard printed no link in 30s; stderr: %s", errb.String())
	}
	m := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/\?token=(sortie_[A-Za-z0-9_-]{43})$`).FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("sortie dashboard printed %q, want http://127.0.0.1:PORT/?token=TOKEN", link)
	}
	base, tok := m[1], m[2]
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(resp.Cookies()) != 1 || resp.Cookies()[0].Value != tok {
		t.Fatalf("the link: %d to %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(&http.Cookie{Name: "sortie_session", Value: token})
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, page := get(fmt.Sprintf("/jobs/%d", id), tok); code != 200 || !strings.Contains(page, "hello") || !strings.Contains(page, `id="user">carol<`) {
		t.Fatalf("the job's page: %d\n%s", code, page)
	}
	if code, _ := get("/", "sortie_"+strings.Repeat("x", 43)); code != http.StatusUnauthorized {
		t.Fatalf("another token: %d, want 401", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sortie dashboard after SIGTERM: %v; stderr: %s", err, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sortie dashboard did not stop on SIGTERM")
	}

	if r := e.run("dashboard", "--port", "70000"); r.code != 2 || !strings.Contains(r.stderr, "--port 70000") {
		t.Errorf("a bad port: exit %d, %q", r.code, r.stderr)
	}
	r := e.must("server", "users", "add", "dave", "--url", "https://sortie.example.com:8443/")
	if want := "https://sortie.example.com:8443/?token=" + strings.TrimSpace(r.stdout); !strings.Contains(r.stderr, want) {
		t.Errorf("users add printed %q, want the link %s", r.stderr, want)
	}
	if r := e.run("server", "users", "add", "erin", "--url", "sortie.example.com"); r.code != 2 || !strings.Contains(r.stderr, `--url "sortie.example.com"`) {
		t.Errorf("a bad --url: exit %d, %q", r.code, r.stderr)
	}
}
