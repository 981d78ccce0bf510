package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"sortie/controller/api/web"
	"sortie/controller/contract"
)

// CookieName is the session cookie: the token a user signed in with,
// HttpOnly (no script reads it) and SameSite=Strict (no other site's page
// sends it), Secure when the dashboard is served over TLS.
const CookieName = "sortie_session"

// session is a signed-in request: who, their token's CSRF token, and the
// service asked by them.
type session struct {
	asker *contract.Asker
	csrf  string
	svc   Service
}

// OneToken signs in one user with one token: `sortie dashboard`'s local
// user, with the token it made for this run.
func OneToken(token string, who *contract.Asker) func(ctx context.Context, token string) (*contract.Asker, error) {
	return func(_ context.Context, given string) (*contract.Asker, error) {
		if token == "" || subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
			return nil, &httpErr{status: http.StatusUnauthorized, msg: "the token is not this dashboard's: use the link `sortie dashboard` printed when it started"}
		}
		return who, nil
	}
}

// csrfToken is the token every form of a session carries and every POST
// is checked against: derived from the session's own token, which no
// other site can read (the cookie is HttpOnly), so no other site can make
// it; one per token, so every server of a team derives the same.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("sortie dashboard: forms"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// httpErr is an error with the status its page answers.
type httpErr struct {
	status int
	msg    string
}

func (e *httpErr) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &httpErr{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) error {
	return &httpErr{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...)}
}

// setSession sets the session cookie.
func setSession(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// signedIn reads the request's session cookie; nil when there is none.
func (d *Dashboard) signedIn(r *http.Request) (*session, error) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	return d.sessionFor(r.Context(), c.Value)
}

func (d *Dashboard) sessionFor(ctx context.Context, token string) (*session, error) {
	a, err := d.o.Auth(ctx, token)
	if err != nil {
		return nil, err
	}
	return &session{asker: a, csrf: csrfToken(token), svc: d.o.Service(a)}, nil
}

// refused says whether err refuses a token (401), rather than tells of
// a store that could not be asked: only a refused token signs out.
func refused(err error) bool {
	var he *httpErr
	if errors.As(err, &he) {
		return he.status == http.StatusUnauthorized
	}
	status, _ := web.Detail(err)
	return status == http.StatusUnauthorized
}

// withoutToken is the request's address without its token parameter,
// its path as the request escaped it: a path a browser could read as
// another site's address is /.
func withoutToken(u *url.URL) string {
	q := u.Query()
	q.Del("token")
	out := sitePath(u.EscapedPath())
	if e := q.Encode(); e != "" {
		out += "?" + e
	}
	return out
}

// localPath keeps a sign-in's next address on this site: a path (see
// sitePath) with its query, else /.
func localPath(next string) string {
	p, query, hasQuery := strings.Cut(next, "?")
	if sitePath(p) != p {
		return "/"
	}
	if !hasQuery || strings.ContainsFunc(query, isControl) {
		return p
	}
	return p + "?" + query
}

// sitePath is p when every browser reads it as a path of this site, else
// /. A browser drops tabs and newlines anywhere in an address, trims
// controls and spaces around it, and reads a backslash as a slash, so
// "/\evil", "/\t/evil" and "//evil" all name the site evil. p must
// begin with exactly one slash and hold no backslash and no control
// character, as written and as decoded (again and again, for whoever
// decodes it once more on the way).
func sitePath(p string) string {
	orig := p
	for range 4 {
		if !onSite(p) {
			return "/"
		}
		dec, err := url.PathUnescape(p)
		if err != nil {
			return "/"
		}
		if dec == p {
			return orig
		}
		p = dec
	}
	return "/"
}

// onSite says whether the path p, as it is, can only name this site.
func onSite(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return false
	}
	return !strings.ContainsRune(p, '\\') && !strings.ContainsFunc(p, isControl)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// page serves a GET page to a signed-in user. A ?token=TOKEN address
// signs in: it sets the cookie and sends the browser to the same address
// without the token, so the token stays in neither the address bar nor
// the history. Without a session a page sends the browser to sign in; a
// part of a page (what the scripts fetch) answers 401.
func (d *Dashboard) page(h func(w http.ResponseWriter, r *http.Request, s *session) error) http.HandlerFunc {
	return d.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
		w.Header().Set("Cache-Control", "no-store")
		if tok := strings.TrimSpace(r.URL.Query().Get("token")); tok != "" {
			next := withoutToken(r.URL)
			s, err := d.sessionFor(r.Context(), tok)
			if err != nil && !refused(err) {
				return "", err
			}
			if err != nil {
				return "", d.signInForm(w, r, next, http.StatusUnauthorized, err)
			}
			// A browser signed in as someone else is asked first: a link
			// can be anyone's, and one user's link sent to another would
			// have them work, unawares, as its sender.
			cur, err := d.signedIn(r)
			if err != nil && !refused(err) {
				return "", err
			}
			if cur != nil && cur.asker.Name != s.asker.Name {
				return cur.asker.Name, d.switchForm(w, cur, s, tok, next)
			}
			setSession(w, r, tok)
			http.Redirect(w, r, next, http.StatusSeeOther)
			return s.asker.Name, nil
		}
		s, err := d.signedIn(r)
		if err != nil && !refused(err) {
			return "", err
		}
		if err != nil {
			clearSession(w, r)
			if partOfPage(r) {
				return "", &httpErr{status: http.StatusUnauthorized, msg: err.Error()}
			}
			return "", d.signInForm(w, r, r.URL.RequestURI(), http.StatusUnauthorized, err)
		}
		if s == nil {
			if partOfPage(r) {
				return "", &httpErr{status: http.StatusUnauthorized, msg: "sign in again: this page has no session"}
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return "", nil
		}
		return s.asker.Name, h(w, r, s)
	})
}

// partOfPage says whether a request is a script's, for a part of a page
// or a log, rather than a page a person opened.
func partOfPage(r *http.Request) bool {
	return r.URL.Query().Get("partial") != "" || strings.HasSuffix(r.URL.Path, "/logs")
}

// action serves a POST from a page: refused unless it comes from this
// site (its Origin, else its Referer, names this host) and carries the
// session's CSRF token, and then only for a signed-in user.
func (d *Dashboard) action(h func(w http.ResponseWriter, r *http.Request, s *session) error) http.HandlerFunc {
	return d.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
		if err := d.sameOrigin(r); err != nil {
			return "", err
		}
		s, err := d.signedIn(r)
		if err != nil && !refused(err) {
			return "", err
		}
		if err != nil {
			clearSession(w, r)
			return "", &httpErr{status: http.StatusUnauthorized, msg: err.Error()}
		}
		if s == nil {
			return "", &httpErr{status: http.StatusUnauthorized, msg: "sign in first: this request has no session"}
		}
		r.Body = http.MaxBytesReader(w, r.Body, web.DefaultMaxBody)
		given := r.PostFormValue("csrf")
		if subtle.ConstantTimeCompare([]byte(given), []byte(s.csrf)) != 1 {
			return s.asker.Name, forbidden("This request did not come from one of this dashboard's pages (its form token is missing or wrong), so nothing was done. Reload the page and try again.")
		}
		return s.asker.Name, h(w, r, s)
	})
}

// sameOrigin refuses a request sent by another site's page: its Origin
// header, or without one its Referer, must name one of the dashboard's
// own origins, scheme, host and port alike. The request's Host header is
// no proof: whoever sends the request writes it. A request with neither
// header is refused too: browsers send Origin with every POST, and
// programs have the API.
func (d *Dashboard) sameOrigin(r *http.Request) error {
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" || from == "null" {
		return forbidden("This request names no origin (no Origin or Referer header), so nothing was done: the dashboard's forms are sent by its own pages.")
	}
	origin, ok := Origin(from)
	if ok {
		for _, o := range *d.origins.Load() {
			if origin == o {
				return nil
			}
		}
	}
	return forbidden("This request came from another site (%s), so nothing was done: this dashboard takes forms only from pages of its own address. "+
		"(A server that users reach at another address than it listens on, behind a proxy or by a name, is told it with `sortie server --url`.)", from)
}

func (d *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) (string, error) {
	return "", d.signInForm(w, r, localPath(r.URL.Query().Get("next")), http.StatusOK, nil)
}

func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) (string, error) {
	if err := d.sameOrigin(r); err != nil {
		return "", err
	}
	r.Body = http.MaxBytesReader(w, r.Body, web.DefaultMaxBody)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	next := localPath(r.PostFormValue("next"))
	if tok == "" {
		return "", d.signInForm(w, r, next, http.StatusUnauthorized, errors.New("give your token: `sortie server users add NAME` printed it"))
	}
	s, err := d.sessionFor(r.Context(), tok)
	if err != nil && !refused(err) {
		return "", err
	}
	if err != nil {
		return "", d.signInForm(w, r, next, http.StatusUnauthorized, err)
	}
	// A browser signed in as another user changes user only by a form of
	// its own session's: its pages carry that session's form token.
	cur, err := d.signedIn(r)
	if err != nil && !refused(err) {
		return "", err
	}
	if cur != nil && cur.asker.Name != s.asker.Name &&
		subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(cur.csrf)) != 1 {
		return cur.asker.Name, forbidden("This browser is signed in as %s, and this request to sign in as another user did not come from one of this dashboard's pages (its form token is missing or wrong), so nothing was done.", cur.asker.Name)
	}
	setSession(w, r, tok)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return s.asker.Name, nil
}

func (d *Dashboard) signOut(w http.ResponseWriter, r *http.Request, s *session) error {
	clearSession(w, r)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}
