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

	"sortie/controller/api"
	"sortie/controller/service"
)

// CookieName is the session cookie: the token a user signed in with,
// HttpOnly (no script reads it) and SameSite=Strict (no other site's page
// sends it), Secure when the dashboard is served over TLS.
const CookieName = "sortie_session"

// session is a signed-in request: who, their token's CSRF token, and the
// service asked by them.
type session struct {
	asker *service.Asker
	csrf  string
	svc   *service.Service
}

// OneToken signs in one user with one token: `sortie dashboard`'s local
// user, with the token it made for this run.
func OneToken(token string, who *service.Asker) func(ctx context.Context, token string) (*service.Asker, error) {
	return func(_ context.Context, given string) (*service.Asker, error) {
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
	svc := *d.o.Service
	svc.Asker = a
	return &session{asker: a, csrf: csrfToken(token), svc: &svc}, nil
}

// refused says whether err refuses a token (401), rather than tells of
// a store that could not be asked: only a refused token signs out.
func refused(err error) bool {
	var he *httpErr
	if errors.As(err, &he) {
		return he.status == http.StatusUnauthorized
	}
	status, _ := api.Detail(err)
	return status == http.StatusUnauthorized
}

// withoutToken is the request's address without its token parameter.
func withoutToken(u *url.URL) string {
	q := u.Query()
	q.Del("token")
	out := u.Path
	if e := q.Encode(); e != "" {
		out += "?" + e
	}
	return out
}

// localPath keeps a sign-in's next address on this site: a path, else /.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	return next
}

// page serves a GET page to a signed-in user. A ?token=TOKEN address
// signs in: it sets the cookie and sends the browser to the same address
// without the token, so the token stays in neither the address bar nor
// the history. Without a session a page sends the browser to sign in; a
// part of a page (what the scripts fetch) answers 401.
func (d *Dashboard) page(h func(w http.ResponseWriter, r *http.Request, s *session) error) http.HandlerFunc {
	return d.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
		w.Header().Set("Cache-Control", "no-store")
		if tok := r.URL.Query().Get("token"); tok != "" {
			s, err := d.sessionFor(r.Context(), strings.TrimSpace(tok))
			if err != nil && !refused(err) {
				return "", err
			}
			if err != nil {
				return "", d.signInForm(w, r, withoutToken(r.URL), http.StatusUnauthorized, err)
			}
			setSession(w, r, strings.TrimSpace(tok))
			http.Redirect(w, r, withoutToken(r.URL), http.StatusSeeOther)
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
		if err := sameOrigin(r); err != nil {
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
		r.Body = http.MaxBytesReader(w, r.Body, api.DefaultMaxBody)
		given := r.PostFormValue("csrf")
		if subtle.ConstantTimeCompare([]byte(given), []byte(s.csrf)) != 1 {
			return s.asker.Name, forbidden("This request did not come from one of this dashboard's pages (its form token is missing or wrong), so nothing was done. Reload the page and try again.")
		}
		return s.asker.Name, h(w, r, s)
	})
}

// sameOrigin refuses a request sent by another site's page: its Origin
// header, or without one its Referer, must name the host it was sent to.
// A request with neither is refused too: browsers send Origin with every
// POST, and programs have the API.
func sameOrigin(r *http.Request) error {
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" || from == "null" {
		return forbidden("This request names no origin (no Origin or Referer header), so nothing was done: the dashboard's forms are sent by its own pages.")
	}
	u, err := url.Parse(from)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return forbidden("This request came from another site (%s), so nothing was done.", from)
	}
	return nil
}

func (d *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) (string, error) {
	return "", d.signInForm(w, r, localPath(r.URL.Query().Get("next")), http.StatusOK, nil)
}

func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) (string, error) {
	if err := sameOrigin(r); err != nil {
		return "", err
	}
	r.Body = http.MaxBytesReader(w, r.Body, api.DefaultMaxBody)
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
	setSession(w, r, tok)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return s.asker.Name, nil
}

func (d *Dashboard) signOut(w http.ResponseWriter, r *http.Request, s *session) error {
	clearSession(w, r)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}
