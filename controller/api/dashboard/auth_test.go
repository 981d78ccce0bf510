package dashboard

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// A path is kept only when a browser can read it as nothing but a path
// of this site, as written and as decoded.
func TestSitePath(t *testing.T) {
	for _, p := range []string{"/", "/jobs/3", "/failures", "/jobs/3/cancel", "/a%20b", "/%E2%9C%93", "/x/..%2Fy"} {
		if got := sitePath(p); got != p {
			t.Errorf("sitePath(%q) = %q, want it kept", p, got)
		}
	}
	for _, p := range []string{"", "jobs", "//evil", "/\\evil", "\\/evil", "/%5Cevil", "/%5cevil", "/%2F%2Fevil", "/%2Fevil",
		"/\t/evil", "/%09/evil", "/%0A/evil", "/%0d/evil", "/\x7f", "/x\\y", "/%255Cevil", "/%252F/evil", "/%zz", "https://evil", "javascript:alert(1)"} {
		if got := sitePath(p); got != "/" {
			t.Errorf("sitePath(%q) = %q, want /", p, got)
		}
	}
	for next, want := range map[string]string{
		"/failures?forgot=k": "/failures?forgot=k", "/?page=2": "/?page=2", "//evil?x": "/", "/%5Cevil?x=1": "/",
		"/jobs/1?x=\t": "/jobs/1", "https://evil/": "/", "/\\evil.example": "/",
	} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
}

// serve sends the request line target (as a browser or an attacker
// writes it) to the dashboard, with the session cookie of cookieUser
// ("" for none) and headers as name, value pairs ("Host" sets the Host).
func (td *testDash) serve(t *testing.T, method, target, cookieUser string, form url.Values, headers ...string) *http.Response {
	t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Host = strings.TrimPrefix(td.URL, "http://")
	if cookieUser != "" {
		r.AddCookie(&http.Cookie{Name: CookieName, Value: td.tokens[cookieUser]})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			r.Host = headers[i+1]
		} else {
			r.Header.Set(headers[i], headers[i+1])
		}
	}
	w := httptest.NewRecorder()
	td.d.ServeHTTP(w, r)
	return w.Result()
}

// A ?token= link on a path a browser reads as another site's address
// signs in and sends the browser to /, never elsewhere.
func TestTokenLinkRedirectStaysOnSite(t *testing.T) {
	td := newTestDash(t, Options{})
	tok := url.QueryEscape(td.tokens["alice"])
	for _, p := range []string{"/%5Cevil.example:18482/landed", "/%5C%5Cevil", "/%2F%2Fevil", "/%09/evil", "/%0A/evil", "/%09%5Cevil", "/x/..%2F%5Cevil", "/%255Cevil"} {
		resp := td.serve(t, "GET", p+"?x=1&token="+tok, "", nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/?x=1" {
			t.Errorf("%s: %d to %q, want 303 to /?x=1", p, resp.StatusCode, loc)
		}
	}
	resp := td.serve(t, "GET", "/jobs/7?token="+tok, "", nil)
	if loc := resp.Header.Get("Location"); loc != "/jobs/7" {
		t.Errorf("a page's own link: to %q", loc)
	}
}

// A token link for bob in a browser signed in as alice asks first and
// sets no cookie; only a POST of this site with alice's form token
// switches. alice's own link, or a link in a browser without a session,
// signs in at once.
func TestTokenLinkAsksBeforeSwitching(t *testing.T) {
	td := newTestDash(t, Options{})
	bob := url.QueryEscape(td.tokens["bob"])
	resp := td.serve(t, "GET", "/failures?token="+bob, "alice", nil)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || sessionCookie(resp) != nil {
		t.Fatalf("bob's link for alice: %d, cookie %v", resp.StatusCode, sessionCookie(resp))
	}
	for _, want := range []string{"You are signed in as <strong>alice</strong>; this link signs you in as <strong>bob</strong>",
		`id="user">alice<`, `name="csrf" value="` + csrfToken(td.tokens["alice"]) + `"`, `name="next" value="/failures"`, `href="/failures"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, body)
		}
	}
	form := url.Values{"token": {td.tokens["bob"]}, "next": {"/failures"}}
	if resp := td.serve(t, "POST", "/signin", "alice", form, "Origin", td.URL); resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil {
		t.Errorf("a switch without alice's form token: %d", resp.StatusCode)
	}
	form.Set("csrf", csrfToken(td.tokens["alice"]))
	if resp := td.serve(t, "POST", "/signin", "alice", form, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden || sessionCookie(resp) != nil {
		t.Errorf("a switch from another site: %d", resp.StatusCode)
	}
	resp = td.serve(t, "POST", "/signin", "alice", form, "Origin", td.URL)
	if c := sessionCookie(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.Value != td.tokens["bob"] || resp.Header.Get("Location") != "/failures" {
		t.Fatalf("continue: %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	for _, who := range []string{"alice", ""} {
		resp := td.serve(t, "GET", "/failures?token="+url.QueryEscape(td.tokens["alice"]), who, nil)
		if c := sessionCookie(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.Value != td.tokens["alice"] {
			t.Errorf("alice's link with the session of %q: %d, cookie %v", who, resp.StatusCode, c)
		}
	}
	// The sign-in form of a browser signed in carries its form token.
	if body := readAll(t, td.serve(t, "GET", "/signin", "alice", nil)); !strings.Contains(body, `name="csrf" value="`+csrfToken(td.tokens["alice"])+`"`) {
		t.Errorf("the sign-in form of alice's browser has no form token:\n%s", body)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Origin check compares scheme, host and port with the dashboard's
// own origins, never with the request's Host.
func TestOriginIsTheDashboards(t *testing.T) {
	td := newTestDash(t, Options{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(td.URL, "http://"))
	form := url.Values{"csrf": {csrfToken(td.tokens["alice"])}}
	for _, h := range [][]string{
		{"Origin", "https://127.0.0.1:" + port},
		{"Origin", "http://evil.example", "Host", "evil.example"},
		{"Origin", "http://evil.example:" + port, "Host", "evil.example:" + port},
		{"Referer", "https://127.0.0.1:" + port + "/", "Host", "127.0.0.1:" + port},
		{"Origin", "http://127.0.0.1:" + port + "@evil.example"},
		{"Origin", "http://127.0.0.1"},
	} {
		if resp := td.serve(t, "POST", "/signout", "alice", form, h...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: %d, want 403", h, resp.StatusCode)
		}
	}
	for _, o := range []string{td.URL, "http://localhost:" + port, "HTTP://LOCALHOST:" + port} {
		if resp := td.serve(t, "POST", "/signout", "alice", form, "Origin", o); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("Origin %s: %d, want 303", o, resp.StatusCode)
		}
	}

	// A dashboard told its public address takes forms from it alone,
	// whatever Host the request names.
	td.d.Serving([]string{"https://sortie.example.com"})
	if resp := td.serve(t, "POST", "/signout", "alice", form, "Origin", "https://sortie.example.com:443", "Host", "127.0.0.1"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the public address: %d, want 303", resp.StatusCode)
	}
	for _, o := range []string{td.URL, "http://sortie.example.com", "https://sortie.example.com:8443"} {
		if resp := td.serve(t, "POST", "/signout", "alice", form, "Origin", o, "Host", "sortie.example.com"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %s beside the public address: %d, want 403", o, resp.StatusCode)
		}
	}
	// One that does not know its address takes no form.
	td.d.Serving(nil)
	if resp := td.serve(t, "POST", "/signout", "alice", form, "Origin", td.URL); resp.StatusCode != http.StatusForbidden {
		t.Errorf("no origins known: %d, want 403", resp.StatusCode)
	}
}

func TestOrigins(t *testing.T) {
	tcp := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, c := range []struct {
		public string
		addr   string
		tls    bool
		want   []string
	}{
		{"", "127.0.0.1:8080", false, []string{"http://127.0.0.1:8080", "http://localhost:8080"}},
		{"", "[::1]:8080", true, []string{"https://[::1]:8080", "https://localhost:8080"}},
		{"", "10.1.2.3:443", true, []string{"https://10.1.2.3:443"}},
		{"https://Sortie.Example.com/", "127.0.0.1:8080", false, []string{"https://sortie.example.com:443"}},
		{"http://sortie.example.com:8000", "0.0.0.0:8000", false, []string{"http://sortie.example.com:8000"}},
	} {
		got, err := Origins(c.public, tcp(c.addr), c.tls)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Origins(%q, %s, %t) = %v, %v; want %v", c.public, c.addr, c.tls, got, err, c.want)
		}
	}
	all, err := Origins("", tcp("0.0.0.0:9000"), false)
	if err != nil || !slices.Contains(all, "http://localhost:9000") || !slices.Contains(all, "http://127.0.0.1:9000") {
		t.Errorf("every address: %v, %v", all, err)
	}
	for _, bad := range []string{"sortie.example.com", "ftp://x", "https://", "https://x/path", "https://x/?q", "https://u@x"} {
		if PublicURL(bad) == nil {
			t.Errorf("PublicURL(%q) took it", bad)
		}
	}
}
