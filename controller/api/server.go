// Package api is sortie's HTTP API: JSON over the service package's verbs,
// one route each, behind bearer tokens, for `sortie server`. Its request
// and response bodies are the service's types.
//
// It must not import sortie/controller, controller/clouds/all or a cloud SDK:
// the API serves the service's verbs.
package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"sortie/controller/api/web"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// Limits of request bodies: a launch (a task file, its envs and secrets)
// and the other JSON bodies; an upload of a workdir or a file mount.
const (
	DefaultMaxBody   = web.DefaultMaxBody
	DefaultMaxUpload = 1 << 30 // 1 GiB
)

// Options are a server's parts.
type Options struct {
	// Service carries the verbs; each request uses a copy asked by the
	// request's user. Its Inputs, StartDaemon and Getenv are the server's.
	Service *service.Service
	Store   *store.Store
	// Uploads is where uploads are kept and unpacked.
	Uploads *Uploads
	Log     *slog.Logger
	// MaxBody and MaxUpload bound request bodies; 0 is the default.
	MaxBody, MaxUpload int64
}

// Server answers the API.
type Server struct {
	o   Options
	mux *http.ServeMux
}

// routes are the API's routes, as http.ServeMux patterns, with what each
// is: the OpenAPI document must list each of them, and only them.
var routes = []string{
	"GET /v1/healthz",
	"GET /v1/openapi.json",
	"GET /v1/me",
	"POST /v1/jobs",
	"GET /v1/jobs",
	"GET /v1/jobs/{id}",
	"GET /v1/jobs/{id}/logs",
	"POST /v1/jobs/{id}/cancel",
	"POST /v1/jobs/{id}/release",
	"POST /v1/jobs/{id}/priority",
	"POST /v1/jobs/cancel",
	"POST /v1/jobs/retry",
	"GET /v1/failures",
	"DELETE /v1/failures",
	"DELETE /v1/failures/{key}",
	"GET /v1/quarantine",
	"DELETE /v1/quarantine/{cloud}/{region}/{zone}",
	"DELETE /v1/quarantine/{cloud}/{region}/{zone}/type/{instance_type}",
	"DELETE /v1/quarantine/{cloud}/{region}/node/{node}",
	"GET /v1/prices",
	"POST /v1/prices/refresh",
	"GET /v1/quotas",
	"PUT /v1/quotas",
	"POST /v1/quotas/unset",
	"GET /v1/usage",
	"HEAD /v1/blobs/{sha256}",
	"PUT /v1/blobs/{sha256}",
}

// NewServer builds the API's handler.
func NewServer(o Options) *Server {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxUpload <= 0 {
		o.MaxUpload = DefaultMaxUpload
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Uploads != nil {
		// What an upload unpacks to is bounded as the upload itself is.
		if o.Uploads.Max <= 0 {
			o.Uploads.Max = o.MaxUpload
		}
		if o.Uploads.Log == nil {
			o.Uploads.Log = o.Log
		}
	}
	s := &Server{o: o, mux: http.NewServeMux()}
	h := map[string]func(w http.ResponseWriter, r *http.Request, svc *service.Service) error{
		"GET /v1/me":                                    s.me,
		"POST /v1/jobs":                                 s.launch,
		"GET /v1/jobs":                                  s.queue,
		"GET /v1/jobs/{id}":                             s.show,
		"GET /v1/jobs/{id}/logs":                        s.logs,
		"POST /v1/jobs/{id}/cancel":                     s.cancelOne,
		"POST /v1/jobs/{id}/release":                    s.release,
		"POST /v1/jobs/{id}/priority":                   s.priority,
		"POST /v1/jobs/cancel":                          s.cancel,
		"POST /v1/jobs/retry":                           s.retry,
		"GET /v1/failures":                              s.failures,
		"DELETE /v1/failures":                           s.forgetAll,
		"DELETE /v1/failures/{key}":                     s.forget,
		"GET /v1/quarantine":                            s.quarantine,
		"DELETE /v1/quarantine/{cloud}/{region}/{zone}": s.clearQuarantine,
		"DELETE /v1/quarantine/{cloud}/{region}/{zone}/type/{instance_type}": s.clearQuarantine,
		"DELETE /v1/quarantine/{cloud}/{region}/node/{node}":                 s.clearQuarantine,
		"GET /v1/prices":          s.prices,
		"POST /v1/prices/refresh": s.refreshPrices,
		"GET /v1/quotas":          s.quotas,
		"PUT /v1/quotas":          s.setQuota,
		"POST /v1/quotas/unset":   s.unsetQuota,
		"GET /v1/usage":           s.usage,
		"HEAD /v1/blobs/{sha256}": s.hasBlob,
		"PUT /v1/blobs/{sha256}":  s.putBlob,
		"GET /v1/healthz":         nil,
		"GET /v1/openapi.json":    s.openapi,
	}
	for _, pattern := range routes {
		switch pattern {
		case "GET /v1/healthz":
			s.mux.HandleFunc(pattern, s.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
				return "", web.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
			}))
		default:
			s.mux.HandleFunc(pattern, s.authed(h[pattern]))
		}
	}
	s.mux.HandleFunc("/", s.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
		return "", web.Errorf(http.StatusNotFound, contract.CodeNoRoute, "no route %s %s: see /v1/openapi.json", r.Method, r.URL.Path)
	}))
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// logged runs h and writes its error as the API's JSON.
func (s *Server) logged(h func(w http.ResponseWriter, r *http.Request) (string, error)) http.HandlerFunc {
	return web.Logged(s.o.Log, func(w http.ResponseWriter, _ *http.Request, _ string, err error) {
		status, d := web.Detail(err)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sortie"`)
		}
		_ = web.WriteJSON(w, status, contract.ErrorBody{Error: d})
	}, h)
}

// authed runs h for the user the request's bearer token names, with a
// service asked by that user.
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request, svc *service.Service) error) http.HandlerFunc {
	return s.logged(func(w http.ResponseWriter, r *http.Request) (string, error) {
		u, err := s.user(r)
		if err != nil {
			return "", err
		}
		return u.Name, h(w, r, s.o.Service.As(&contract.Asker{Name: u.Name, Admin: u.Admin}))
	})
}

// user is the user whose token the request carries.
func (s *Server) user(r *http.Request) (*store.User, error) {
	token, ok := BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, web.Errorf(http.StatusUnauthorized, contract.CodeUnauthorized,
			"this route needs a token: send Authorization: Bearer TOKEN (`sortie server users add NAME` makes one)")
	}
	return UserByToken(r.Context(), s.o.Store, token)
}

// BearerToken is the token of an Authorization header of the Bearer
// scheme, matched in any case (RFC 9110 §11.1: a scheme is
// case-insensitive); the token is taken as sent, without the spaces
// around it. ok is false for another scheme or no token.
func BearerToken(auth string) (token string, ok bool) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(auth), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(rest)
	return token, token != ""
}

// UserByToken is the user a token names: an unknown or revoked token is a
// 401 error saying so. The dashboard signs in with it too.
func UserByToken(ctx context.Context, st *store.Store, token string) (*store.User, error) {
	hash := HashToken(token)
	u, err := st.UserByTokenHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, web.Errorf(http.StatusUnauthorized, contract.CodeUnauthorized, "the token is not one this server knows; ask an admin for one (`sortie server users add NAME`)")
	}
	if err != nil {
		return nil, err
	}
	// The lookup was by the hash; the hashes are compared once more in
	// constant time, so no branch on a byte of the secret is ever timed.
	if subtle.ConstantTimeCompare([]byte(u.TokenHash), []byte(hash)) != 1 {
		return nil, web.Errorf(http.StatusUnauthorized, contract.CodeUnauthorized, "the token is not one this server knows")
	}
	if u.RevokedAt != nil {
		return nil, web.Errorf(http.StatusUnauthorized, contract.CodeUnauthorized, "the token of %s was revoked on %s; ask an admin for a new one",
			u.Name, u.RevokedAt.UTC().Format(time.RFC3339))
	}
	return u, nil
}

// NewToken makes a token: 32 random bytes, base64url, after "sortie_"
// (so that secret scanners can tell it); and its hash as stored.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = "sortie_" + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken is the hash a token is stored and looked up by: SHA-256, hex.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// readJSON decodes a request's body into v, refusing a body over the
// limit (413, naming it) and fields the type does not have.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.o.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &web.Error{Status: http.StatusRequestEntityTooLarge, Code: contract.CodeTooLarge, Limit: mbe.Limit,
				Msg: fmt.Sprintf("the request body is over the limit of %d bytes (--max-body)", mbe.Limit)}
		}
		return &contract.UsageError{Err: fmt.Errorf("the request body is not the JSON this route takes: %v", err)}
	}
	return nil
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	return web.StreamLogs(w, r, svc)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(OpenAPI)
	return err
}

// answerOK writes v as the request's answer, unless err says why there is
// none.
func answerOK(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	return web.WriteJSON(w, http.StatusOK, v)
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	return web.WriteJSON(w, http.StatusOK, svc.Asker)
}

func (s *Server) launch(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.LaunchRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	if req.Task == nil {
		return &contract.UsageError{Err: errors.New("task: give the task file's content (a server reads no file of yours)")}
	}
	req.Dir = ""
	warnings := []string{}
	req.Warn = func(m string) { warnings = append(warnings, m) }
	j, err := svc.Launch(r.Context(), req)
	if err != nil {
		return err
	}
	return web.WriteJSON(w, http.StatusCreated, contract.LaunchResult{Job: j, Warnings: warnings})
}

func (s *Server) queue(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	q := r.URL.Query()
	all, err := web.BoolQuery(r, "all")
	if err != nil {
		return err
	}
	finished, err := web.IntQuery(r, "finished", 50)
	if err != nil {
		return err
	}
	limit, err := web.IntQuery(r, "limit", 0)
	if err != nil {
		return err
	}
	before, err := web.IntQuery(r, "before", 0)
	if err != nil {
		return err
	}
	req := contract.QueueRequest{All: all, NameGlob: q.Get("name"), Finished: finished, Owner: q.Get("owner"), Limit: limit, Before: int64(before)}
	for _, v := range q["status"] {
		for _, st := range strings.Split(v, ",") {
			if st != "" {
				req.Statuses = append(req.Statuses, lifecycle.Status(st))
			}
		}
	}
	// The listing streams: a store of 100,000 jobs is never in memory.
	first := true
	err = svc.QueueEach(r.Context(), req, func(v contract.JobView) error {
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "[\n")
		} else {
			io.WriteString(w, ",\n")
		}
		first = false
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if first {
		return web.WriteJSON(w, http.StatusOK, []contract.JobView{})
	}
	_, err = io.WriteString(w, "\n]\n")
	return err
}

func (s *Server) show(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	id, err := web.PathID(r)
	if err != nil {
		return err
	}
	d, err := svc.Show(r.Context(), id)
	return answerOK(w, d, err)
}

func (s *Server) cancelOne(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	id, err := web.PathID(r)
	if err != nil {
		return err
	}
	marked, err := svc.Cancel(r.Context(), contract.CancelRequest{IDs: []int64{id}})
	return answerOK(w, contract.Cancelled{Cancelled: orEmpty(marked)}, err)
}

// cancel is a cancel by ids, filter or all; ?dry_run=true lists the jobs
// it would cancel, for the CLI's --dry-run and its confirmation.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.CancelRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	dry, err := web.BoolQuery(r, "dry_run")
	if err != nil {
		return err
	}
	if dry {
		ts, err := svc.CancelTargets(r.Context(), req)
		return answerOK(w, orEmpty(ts), err)
	}
	marked, err := svc.Cancel(r.Context(), req)
	return answerOK(w, contract.Cancelled{Cancelled: orEmpty(marked)}, err)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	id, err := web.PathID(r)
	if err != nil {
		return err
	}
	v, err := svc.Release(r.Context(), id)
	return answerOK(w, v, err)
}

// priority changes a waiting job's priority; who asked is the token's user.
func (s *Server) priority(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	id, err := web.PathID(r)
	if err != nil {
		return err
	}
	var req contract.PriorityRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	v, err := svc.SetPriority(r.Context(), id, req.Priority)
	return answerOK(w, v, err)
}

// retry retries by ids or filter; ?dry_run=true lists the jobs it would
// retry. Who asked is the token's user, whatever the body says.
func (s *Server) retry(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.RetryRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	req.RequestedBy = svc.Asker.Name
	dry, err := web.BoolQuery(r, "dry_run")
	if err != nil {
		return err
	}
	if dry {
		ts, err := svc.RetryTargets(r.Context(), req)
		return answerOK(w, orEmpty(ts), err)
	}
	warnings := []string{}
	req.Warn = func(m string) { warnings = append(warnings, m) }
	rs, err := svc.Retry(r.Context(), req)
	if err != nil {
		return err
	}
	return web.WriteJSON(w, http.StatusCreated, contract.RetryResults{Retries: orEmpty(rs), Warnings: warnings})
}

func (s *Server) failures(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	fs, err := svc.Failures(r.Context())
	return answerOK(w, orEmpty(fs), err)
}

func (s *Server) forget(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	key, err := svc.ForgetFailure(r.Context(), r.PathValue("key"))
	return answerOK(w, contract.Forgotten{Key: key, Count: 1}, err)
}

func (s *Server) forgetAll(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	n, err := svc.ForgetAllFailures(r.Context())
	return answerOK(w, contract.Forgotten{Count: n}, err)
}

func (s *Server) quarantine(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	qs, err := svc.Quarantine(r.Context())
	return answerOK(w, orEmpty(qs), err)
}

func (s *Server) clearQuarantine(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	c, err := svc.ClearQuarantine(r.Context(), strategy.QuarantineKey{
		Placement:    schema.Placement{Cloud: r.PathValue("cloud"), Region: r.PathValue("region"), Zone: r.PathValue("zone")},
		InstanceType: r.PathValue("instance_type"), Host: r.PathValue("node")})
	return answerOK(w, c, err)
}

func (s *Server) prices(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	q := r.URL.Query()
	ps, err := svc.Prices(r.Context(), contract.PricesRequest{Cloud: q.Get("cloud"), Type: q.Get("type"), Region: q.Get("region")})
	return answerOK(w, orEmpty(ps), err)
}

func (s *Server) refreshPrices(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.PricesRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	res, err := svc.RefreshPrices(r.Context(), req)
	return answerOK(w, res, err)
}

func (s *Server) quotas(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	qs, err := svc.Quotas(r.Context())
	return answerOK(w, orEmpty(qs), err)
}

// setQuota sets one scope's quota: an admin only (403 forbidden
// otherwise).
func (s *Server) setQuota(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.QuotaRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	v, err := svc.SetQuota(r.Context(), req)
	return answerOK(w, v, err)
}

// unsetQuota removes one scope's quota: an admin only.
func (s *Server) unsetQuota(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	var req contract.QuotaRequest
	if err := s.readJSON(w, r, &req); err != nil {
		return err
	}
	v, err := svc.UnsetQuota(r.Context(), req)
	return answerOK(w, v, err)
}

// usage is `sortie server usage`: every user's row for an admin, the
// asker's own for any other user.
func (s *Server) usage(w http.ResponseWriter, r *http.Request, svc *service.Service) error {
	rows, err := svc.Usage(r.Context())
	return answerOK(w, orEmpty(rows), err)
}

func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// CheckListen refuses an address beyond loopback without TLS, unless
// insecure: a token sent in the clear can be read on the way.
func CheckListen(addr string, tls, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: give host:port, e.g. 127.0.0.1:8080 (%v)", addr, err)
	}
	if tls || insecure {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q is beyond this machine's loopback, where tokens would cross the network in the clear: "+
		"give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a proxy that speaks TLS, or pass --insecure to accept the risk", addr)
}

// ServeOptions are how Serve listens.
type ServeOptions struct {
	Listen           string
	TLSCert, TLSKey  string
	Insecure         bool
	Log              *slog.Logger
	OnListen         func(addr net.Addr)
	ShutdownDeadline time.Duration
}

// Serve serves h until ctx ends, with timeouts on reading a request's
// head and body and on idle connections: a slow or silent client holds a
// connection for a bounded time. Responses have no write timeout, so a
// followed log streams as long as its job runs.
func Serve(ctx context.Context, h http.Handler, o ServeOptions) error {
	useTLS := o.TLSCert != "" || o.TLSKey != ""
	if useTLS && (o.TLSCert == "" || o.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both")
	}
	if err := CheckListen(o.Listen, useTLS, o.Insecure); err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10}
	if useTLS {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert %s, --tls-key %s: %w", o.TLSCert, o.TLSKey, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	if useTLS {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	if o.Log != nil {
		o.Log.Info("serving the API", "url", scheme+"://"+ln.Addr().String()+"/v1/")
	}
	if o.OnListen != nil {
		o.OnListen(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := o.ShutdownDeadline
	if grace <= 0 {
		grace = 5 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ForServer makes svc the service of a server: uploads for inputs, no
// environment of its own for secrets, and wake (the controller of this
// process) told of each change where a CLI would start or nudge one.
func ForServer(svc *service.Service, up *Uploads, wake func()) *service.Service {
	svc.Inputs = up.Path
	svc.Getenv = func(string) string { return "" }
	svc.FindDaemon = nil
	svc.StartDaemon = func(context.Context, string) error {
		if wake != nil {
			wake()
		}
		return nil
	}
	svc.Asker = nil
	return svc
}

// TokenAuth signs the server's users in to the dashboard: a token names
// its user, as a bearer token does for the API.
func TokenAuth(st *store.Store) func(ctx context.Context, token string) (*contract.Asker, error) {
	return func(ctx context.Context, token string) (*contract.Asker, error) {
		u, err := UserByToken(ctx, st, token)
		if err != nil {
			return nil, err
		}
		return &contract.Asker{Name: u.Name, Admin: u.Admin}, nil
	}
}
