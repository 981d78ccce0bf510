package smoke_tests

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// rawGet sends "GET target" to the server exactly as written (no client
// cleans it), with the cookie given, and returns the answer and its body.
func rawGet(t *testing.T, s *server, target, cookie string) (*http.Response, string) {
	t.Helper()
	u, _ := url.Parse(s.url)
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n"
	if cookie != "" {
		req += "Cookie: sortie_session=" + cookie + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %q: %v", target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// asBrowser resolves a Location against base as a browser's URL parser
// does: leading and trailing controls and spaces trimmed, tabs and
// newlines dropped anywhere, and a backslash read as a slash.
func asBrowser(t *testing.T, base *url.URL, loc string) *url.URL {
	t.Helper()
	loc = strings.TrimFunc(loc, func(r rune) bool { return r <= ' ' })
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(loc)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatalf("Location %q does not parse: %v", loc, err)
	}
	return base.ResolveReference(u)
}

// A sign-in link whose path a browser reads as another site's address
// (a backslash, two slashes, a tab, raw or percent-encoded) never sends
// the browser off the server: every Location it is answered with, hop
// after hop, stays on the server's origin. Chromium, given the link of
// the report, ends on the server, not on the other site.
func TestAttackWebSignInRedirectStaysOnSite(t *testing.T) {
	s := startServer(t)
	_, tok := s.user("alice", false)
	base, _ := url.Parse(s.url)
	for _, p := range []string{
		`/%5Cevil.example:18482/landed`, `/%5C%5Cevil.example/landed`, `/%5c/evil.example/`,
		`//evil.example/landed`, `/\evil.example/landed`, `/\/evil.example/`,
		`/%2F%2Fevil.example/landed`, `/%2F/evil.example`, `/%2f%5cevil.example`,
		`/%09/evil.example/landed`, `/%0A/evil.example`, `/%0D%0A/evil.example`, `/%09%5Cevil.example`,
		`/%20/evil.example`, `/./%5Cevil.example`, `/x/..%2F%5Cevil.example`,
	} {
		target := p + "?token=" + url.QueryEscape(tok)
		for hop := 0; hop < 5; hop++ {
			resp, _ := rawGet(t, s, target, "")
			loc := resp.Header.Get("Location")
			if resp.StatusCode < 300 || resp.StatusCode >= 400 {
				break
			}
			to := asBrowser(t, base, loc)
			if to.Scheme != base.Scheme || to.Host != base.Host {
				t.Errorf("%s: HTTP %d Location %q, which a browser follows to %s, off the server", p, resp.StatusCode, loc, to)
				break
			}
			target = to.RequestURI()
		}
	}

	// The report's link, in a browser: the other site is a real one, on
	// another port of 127.0.0.1, and must never be reached.
	landed := make(chan string, 10)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		landed <- r.URL.String()
		fmt.Fprint(w, "<!doctype html><title>evil</title><p id=evil>landed</p>")
	}))
	defer evil.Close()
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	ctx := browser(t, 2*time.Minute)
	link := s.url + "/%5C" + evilHost + "/landed?token=" + url.QueryEscape(tok)
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("open %s: %v", link, err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if to, _ := url.Parse(loc); to == nil || to.Host != base.Host {
		t.Errorf("the browser ended on %q, off the server", loc)
	}
	select {
	case u := <-landed:
		t.Errorf("the other site was reached: %s", u)
	default:
	}
}

// formFields reads the hidden inputs and the action of the first form
// of a page whose action is action.
func formFields(t *testing.T, page, action string) url.Values {
	t.Helper()
	i := strings.Index(page, `action="`+action+`"`)
	if i < 0 {
		t.Fatalf("no form to %s on the page:\n%s", action, page)
	}
	form := page[i:]
	form = form[:strings.Index(form, "</form>")]
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(form, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// post sends a form to the server as a browser would from origin, with
// the session cookie given, following no redirect.
func postForm(t *testing.T, s *server, path, cookie, origin string, form url.Values, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "sortie_session", Value: cookie})
	}
	if host != "" {
		req.Host = host
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

func sessionOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == "sortie_session" {
			return c
		}
	}
	return nil
}

// A browser signed in as alice that opens bob's sign-in link (an
// attacker's own link, sent to her) is asked first: the page names both,
// no cookie is set, and alice stays alice until she confirms with a POST
// of this site carrying her session's form token. Her own link signs her
// in at once, as a link does for a browser with no session.
func TestAttackWebTokenLinkAsksBeforeSwitching(t *testing.T) {
	s := startServer(t)
	_, aliceTok := s.user("alice", false)
	_, bobTok := s.user("bob", false)

	resp, page := rawGet(t, s, "/failures?token="+url.QueryEscape(bobTok), aliceTok)
	if c := sessionOf(resp); c != nil {
		t.Fatalf("bob's link set the cookie of a browser signed in as alice (HTTP %d, Location %q)", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "signed in as <strong>alice</strong>") || !strings.Contains(page, "signs you in as <strong>bob</strong>") {
		t.Fatalf("bob's link with alice's session: HTTP %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, `id="user">bob`) {
		t.Fatal("the confirmation shows bob signed in")
	}
	if _, page := rawGet(t, s, "/failures", aliceTok); !strings.Contains(page, `id="user">alice<`) {
		t.Fatalf("alice is no longer alice:\n%s", page)
	}

	form := formFields(t, page, "/signin")
	if form.Get("csrf") == "" {
		t.Fatalf("the confirmation's form carries no form token: %v", form)
	}
	// Another site cannot confirm for her, nor can a form without her
	// session's form token.
	if resp, _ := postForm(t, s, "/signin", aliceTok, "http://evil.example", form, ""); resp.StatusCode != http.StatusForbidden || sessionOf(resp) != nil {
		t.Errorf("the confirmation from another site: HTTP %d, cookie %v", resp.StatusCode, sessionOf(resp))
	}
	bad := url.Values{"token": {bobTok}, "next": {"/"}}
	if resp, _ := postForm(t, s, "/signin", aliceTok, s.url, bad, ""); resp.StatusCode != http.StatusForbidden || sessionOf(resp) != nil {
		t.Errorf("a switch without alice's form token: HTTP %d, cookie %v", resp.StatusCode, sessionOf(resp))
	}
	resp, _ = postForm(t, s, "/signin", aliceTok, s.url, form, "")
	if c := sessionOf(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.Value != bobTok || resp.Header.Get("Location") != "/failures" {
		t.Fatalf("continue: HTTP %d to %q, cookie %v", resp.StatusCode, resp.Header.Get("Location"), c)
	}

	// Her own link, or any link without a session, signs in as before.
	for _, cookie := range []string{aliceTok, "", "sortie_revoked"} {
		resp, _ := rawGet(t, s, "/failures?token="+url.QueryEscape(aliceTok), cookie)
		if c := sessionOf(resp); resp.StatusCode != http.StatusSeeOther || c == nil || c.Value != aliceTok || resp.Header.Get("Location") != "/failures" {
			t.Errorf("alice's link with the session %q: HTTP %d to %q, cookie %v", cookie, resp.StatusCode, resp.Header.Get("Location"), c)
		}
	}
}

// The API takes the Bearer scheme in any case, as RFC 9110 says auth
// schemes are; the token itself is exact.
func TestAttackWebBearerAnyCase(t *testing.T) {
	s := startServer(t)
	_, tok := s.user("alice", false)
	for _, auth := range []string{"Bearer " + tok, "bearer " + tok, "BEARER " + tok, "bEaReR  " + tok, "Bearer " + strings.ToUpper(tok), "Basic " + tok} {
		req, _ := http.NewRequest("GET", s.url+"/v1/me", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		scheme := strings.Fields(auth)[0]
		want := http.StatusOK
		if scheme == "Basic" || strings.Contains(auth, strings.ToUpper(tok)) {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want || (want == 200 && !strings.Contains(string(b), `"alice"`)) {
			t.Errorf("Authorization: %s …: HTTP %d %s, want %d", scheme, resp.StatusCode, b, want)
		}
	}
}

// A form POST is taken only from the server's own origin, scheme, host
// and port alike: https for a server that speaks http is another origin,
// and a forged Host header that matches a forged Origin is no proof of
// anything. The server's own address, by its IP or as localhost, is.
func TestAttackWebOriginIsTheServers(t *testing.T) {
	s := startServer(t)
	_, tok := s.user("alice", false)
	_, page := rawGet(t, s, "/", tok)
	csrf := formFields(t, page, "/signout").Get("csrf")
	if csrf == "" {
		t.Fatalf("no form token on the queue page:\n%s", page)
	}
	form := url.Values{"csrf": {csrf}}
	base, _ := url.Parse(s.url)
	_, port, _ := net.SplitHostPort(base.Host)
	for _, c := range []struct{ origin, host string }{
		{"https://" + base.Host, ""},
		{"http://evil.example", "evil.example"},
		{"http://evil.example:" + port, "evil.example:" + port},
		{"http://" + base.Host + ".evil.example", base.Host + ".evil.example"},
	} {
		resp, page := postForm(t, s, "/signout", tok, c.origin, form, c.host)
		if resp.StatusCode != http.StatusForbidden || sessionOf(resp) != nil {
			t.Errorf("Origin %s, Host %q: HTTP %d, want 403\n%s", c.origin, c.host, resp.StatusCode, tail(page, 400))
		}
	}
	for _, origin := range []string{s.url, "http://localhost:" + port} {
		if resp, page := postForm(t, s, "/signout", tok, origin, form, ""); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("Origin %s, the server's own: HTTP %d, want 303\n%s", origin, resp.StatusCode, tail(page, 400))
		}
	}

	// A server told its public address (behind a proxy) takes forms from
	// pages of that address alone; a bad --url is refused naming it.
	p := startServerIn(t, newEnv(t), "--url", "https://sortie.example.com")
	_, ptok := p.user("alice", false)
	_, page = rawGet(t, p, "/", ptok)
	pform := url.Values{"csrf": {formFields(t, page, "/signout").Get("csrf")}}
	if resp, page := postForm(t, p, "/signout", ptok, "https://sortie.example.com", pform, "sortie.example.com"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the public address: HTTP %d, want 303\n%s", resp.StatusCode, tail(page, 400))
	}
	if resp, _ := postForm(t, p, "/signout", ptok, p.url, pform, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the listen address beside a public one: HTTP %d, want 403", resp.StatusCode)
	}
	if r := p.run("server", "--listen", "127.0.0.1:0", "--url", "sortie.example.com"); r.code == 0 || !strings.Contains(r.stderr, "--url") {
		t.Errorf("a bad --url: exit %d, %q", r.code, r.stderr)
	}
}
