// Package web holds what the API and the dashboard answer alike: the
// status and body of an error of the service, the log of each request,
// and the stream of a job's logs.
//
// It must not import controller/store or controller/service, so that the
// dashboard, which answers through it, speaks the service's types only.
package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/schema"
)

// DefaultMaxBody bounds a request's JSON or form body: a launch (a task
// file, its envs and secrets) and the other bodies.
const DefaultMaxBody = 1 << 20 // 1 MiB

// Detail maps an error of the service to the status and body the API
// answers it with: the dashboard shows the same problems. The store's
// errors say what they are by a method (NotFound, Busy), so that this
// package need not import it.
func Detail(err error) (int, contract.ErrorDetail) {
	var ve *schema.ValidationError
	var ue *contract.UsageError
	var kf *contract.KnownFailureError
	var be *contract.BudgetError
	var fe *contract.ForbiddenError
	var ae *contract.AdminError
	var ce *config.Error
	var he *Error
	var nf interface{ NotFound() bool }
	var busy interface{ Busy() bool }
	d := contract.ErrorDetail{Message: err.Error()}
	switch {
	case errors.As(err, &he):
		d.Code, d.Limit = he.Code, he.Limit
		return he.Status, d
	case errors.As(err, &kf):
		f := kf.Failure
		d.Code, d.Job, d.Failure = contract.CodeKnownFailure, f.JobID, f
		if f.Owner != nil {
			d.Owner = *f.Owner
		}
		return http.StatusConflict, d
	case errors.As(err, &be):
		d.Code, d.Owner = contract.CodeBudgetSpent, be.User
		d.Budget = &contract.BudgetDetail{User: be.User, Spent: be.Spent, Budget: be.Budget, Estimate: be.Estimate, Month: be.Month}
		return http.StatusPaymentRequired, d
	case errors.As(err, &fe):
		d.Code, d.Job, d.Owner, d.Verb = contract.CodeForbidden, fe.Job, fe.Owner, fe.Verb
		return http.StatusForbidden, d
	case errors.As(err, &ae):
		d.Code, d.Verb = contract.CodeForbidden, ae.Verb
		return http.StatusForbidden, d
	case errors.As(err, &ve):
		d.Code = contract.CodeInvalidTask
		d.Problems = ve.Problems
		return http.StatusUnprocessableEntity, d
	case errors.As(err, &ue):
		d.Code = contract.CodeUsage
		return http.StatusBadRequest, d
	case errors.Is(err, contract.ErrNoSuchJob), errors.As(err, &nf) && nf.NotFound():
		d.Code = contract.CodeNotFound
		return http.StatusNotFound, d
	case errors.As(err, &busy) && busy.Busy():
		d.Code = contract.CodeBusy
		return http.StatusServiceUnavailable, d
	case errors.As(err, &ce):
		d.Code = contract.CodeInternal
		return http.StatusInternalServerError, d
	}
	if reason := contract.ConflictReason(err); reason != "" {
		d.Code, d.Verb = contract.CodeConflict, reason
		return http.StatusConflict, d
	}
	d.Code = contract.CodeInternal
	return http.StatusInternalServerError, d
}

// WriteError answers err as the API does: its status, {"error": {...}}.
func WriteError(w http.ResponseWriter, err error) error {
	status, d := Detail(err)
	return WriteJSON(w, status, contract.ErrorBody{Error: d})
}

// WriteJSON answers v, indented, with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Error is an error of the HTTP layer itself: a bad token, a body over
// its limit, a route that is not there.
type Error struct {
	Status int
	Code   string
	Msg    string
	// Limit is the limit a body went over.
	Limit int64
}

func (e *Error) Error() string { return e.Msg }

// Errorf makes an Error.
func Errorf(status int, code, format string, args ...any) error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// statusWriter remembers the status a handler wrote, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = cmp.Or(w.status, code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.status = cmp.Or(w.status, http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Answered says whether a handler run by Logged has begun its answer: its
// status is written, so an error can only be logged.
func Answered(w http.ResponseWriter) bool {
	sw, ok := w.(*statusWriter)
	return ok && sw.status != 0
}

// Logged runs h, answers its error with writeErr unless the answer had
// begun, and logs the request: method, path (never the query or a header:
// a token is in neither the log nor a URL), status, user and duration.
// The API and the dashboard log their requests through it alike.
func Logged(log *slog.Logger, writeErr func(w http.ResponseWriter, r *http.Request, user string, err error), h func(w http.ResponseWriter, r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		user, err := h(sw, r)
		if err != nil {
			if sw.status != 0 {
				// The body had begun: all that is left is to say so in the log.
				log.Warn("request failed after its answer began", "method", r.Method, "path", r.URL.Path, "err", err)
			} else {
				writeErr(sw, r, user, err)
			}
		}
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", sw.status, "user", user,
			"ms", time.Since(start).Milliseconds())
	}
}

// PathID is the request's {id}, a job id.
func PathID(r *http.Request) (int64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, &contract.UsageError{Err: fmt.Errorf("job id %q is not a job id (a positive whole number)", v)}
	}
	return id, nil
}

// BoolQuery is the query parameter name, true or false; false when absent.
func BoolQuery(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &contract.UsageError{Err: fmt.Errorf("%s=%q: give true or false", name, v)}
	}
	return b, nil
}

// IntQuery is the query parameter name, a whole number from 0; def when
// absent.
func IntQuery(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, &contract.UsageError{Err: fmt.Errorf("%s=%q: give a whole number, 0 or more", name, v)}
	}
	return n, nil
}
