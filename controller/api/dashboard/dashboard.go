// Package dashboard is sortie's web dashboard: server-rendered pages of the
// queue (/), a job (/jobs/{id}) and the known failures (/failures), with a
// little JavaScript that refreshes them in place and follows logs. It
// signs in with the API's tokens, keeps the session in a cookie, and does
// everything through the service's verbs, as the CLI and the API do.
//
// It must not depend on sortie/controller, controller/store,
// controller/service, controller/clouds/all or a cloud SDK: the dashboard
// acts through the service's verbs (Service, filled by the program that
// serves it) and speaks the service's types (controller/contract).
package dashboard

import (
	"context"
	"embed"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"sortie/controller/api/web"
	"sortie/controller/contract"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Service is the verbs the pages and forms call.
type Service interface {
	web.LogReader
	QueueEach(ctx context.Context, req contract.QueueRequest, fn func(contract.JobView) error) error
	Failures(ctx context.Context) ([]contract.FailureView, error)
	Cancel(ctx context.Context, req contract.CancelRequest) ([]int64, error)
	Retry(ctx context.Context, req contract.RetryRequest) ([]contract.RetryResult, error)
	ForgetFailure(ctx context.Context, prefix string) (string, error)
}

// Options are a dashboard's parts.
type Options struct {
	// Service is the service asked by a signed-in user: each request
	// calls the verbs as its user.
	Service func(*contract.Asker) Service
	// Auth names the user a token signs in: the server's users
	// (TokenAuth), or the one local user of `sortie dashboard`. An error
	// refuses the token, its message shown on the sign-in page.
	Auth func(ctx context.Context, token string) (*contract.Asker, error)
	Log  *slog.Logger
	// Now is the clock pages are drawn with; nil is time.Now.
	Now func() time.Time
	// Poll is how often an open page refreshes itself; 0 is 3 s.
	Poll time.Duration
	// PageSize is how many jobs a page of the queue shows; 0 is 50.
	PageSize int
	// Origins are the origins (see Origin) the dashboard is reached at:
	// a form is taken only from a page of one of them. A dashboard whose
	// address is known only once it listens is told it by Serving; until
	// then every form is refused.
	Origins []string
}

// Dashboard serves the pages.
type Dashboard struct {
	o       Options
	mux     *http.ServeMux
	pages   *pages
	origins atomic.Pointer[[]string]
}

// Serving sets the origins the dashboard is reached at (see
// Options.Origins): for a server, Origins of its public address or of
// the address it listens on.
func (d *Dashboard) Serving(origins []string) {
	norm := make([]string, 0, len(origins))
	for _, o := range origins {
		if n, ok := Origin(o); ok {
			norm = append(norm, n)
		}
	}
	d.origins.Store(&norm)
}

// New builds the dashboard's handler.
func New(o Options) (*Dashboard, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = 3 * time.Second
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	if o.Auth == nil {
		return nil, errors.New("dashboard: no Auth: nobody could sign in")
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{o: o, mux: http.NewServeMux(), pages: p}
	d.Serving(o.Origins)
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	d.mux.Handle("GET /static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	d.mux.HandleFunc("GET /signin", d.logged(d.signInPage))
	d.mux.HandleFunc("POST /signin", d.logged(d.signIn))
	d.mux.HandleFunc("POST /signout", d.action(d.signOut))
	d.mux.HandleFunc("GET /{$}", d.page(d.queue))
	d.mux.HandleFunc("GET /jobs/{id}", d.page(d.job))
	d.mux.HandleFunc("GET /jobs/{id}/logs", d.page(d.logs))
	d.mux.HandleFunc("GET /jobs/{id}/cancel", d.page(d.confirmCancel))
	d.mux.HandleFunc("POST /jobs/{id}/cancel", d.action(d.cancel))
	d.mux.HandleFunc("POST /jobs/{id}/retry", d.action(d.retry))
	d.mux.HandleFunc("GET /failures", d.page(d.failures))
	d.mux.HandleFunc("POST /failures/{key}/forget", d.action(d.forget))
	d.mux.HandleFunc("/", d.page(func(w http.ResponseWriter, r *http.Request, s *session) error {
		return notFound("There is no page at %s.", r.URL.Path)
	}))
	return d, nil
}

func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages load only their own scripts and styles, are never framed
	// (a cancel button under another site's page), and send no address,
	// which can carry a token, to another site.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	d.mux.ServeHTTP(w, r)
}

// Mount serves the API at /v1/ and the dashboard at every other path: an
// unknown /v1/ path stays the API's JSON 404.
func Mount(apiHandler http.Handler, d http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", apiHandler)
	mux.Handle("/", d)
	return mux
}

// logged runs h, shows its error as a page, and logs the request as the
// API does.
func (d *Dashboard) logged(h func(w http.ResponseWriter, r *http.Request) (string, error)) http.HandlerFunc {
	return web.Logged(d.o.Log, d.errorPage, h)
}
