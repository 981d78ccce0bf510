package api

import (
	"errors"
	"fmt"
	"net/http"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/schema"
)

// Detail maps an error of the service to the status and body the API
// answers it with: the dashboard shows the same problems.
func Detail(err error) (int, ErrorDetail) { return detail(err) }

// WriteError answers err as the API does: its status, {"error": {...}}.
func WriteError(w http.ResponseWriter, err error) error {
	status, d := detail(err)
	return writeJSON(w, status, ErrorBody{Error: d})
}

// detail maps an error of the service to its status and body.
func detail(err error) (int, ErrorDetail) {
	var ve *schema.ValidationError
	var ue *service.UsageError
	var kf *service.KnownFailureError
	var fe *service.ForbiddenError
	var ce *config.Error
	var he *httpError
	d := ErrorDetail{Message: err.Error()}
	switch {
	case errors.As(err, &he):
		d.Code, d.Limit = he.code, he.limit
		return he.status, d
	case errors.As(err, &kf):
		f := kf.Failure
		d.Code, d.Job, d.Failure = CodeKnownFailure, f.JobID, f
		if f.Owner != nil {
			d.Owner = *f.Owner
		}
		return http.StatusConflict, d
	case errors.As(err, &fe):
		d.Code, d.Job, d.Owner, d.Verb = CodeForbidden, fe.Job, fe.Owner, fe.Verb
		return http.StatusForbidden, d
	case errors.As(err, &ve):
		d.Code = CodeInvalidTask
		d.Problems = ve.Problems
		return http.StatusUnprocessableEntity, d
	case errors.As(err, &ue):
		d.Code = CodeUsage
		return http.StatusBadRequest, d
	case errors.Is(err, service.ErrNoSuchJob), errors.Is(err, store.ErrNotFound):
		d.Code = CodeNotFound
		return http.StatusNotFound, d
	case errors.Is(err, store.ErrBusy):
		d.Code = CodeBusy
		return http.StatusServiceUnavailable, d
	case errors.As(err, &ce):
		d.Code = CodeInternal
		return http.StatusInternalServerError, d
	}
	if reason := contract.ConflictReason(err); reason != "" {
		d.Code, d.Verb = CodeConflict, reason
		return http.StatusConflict, d
	}
	d.Code = CodeInternal
	return http.StatusInternalServerError, d
}

// httpError is an error of the HTTP layer itself: a bad token, a body
// over its limit, a route that is not there.
type httpError struct {
	status int
	code   string
	msg    string
	limit  int64
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) error {
	return &httpError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}
