package api

import (
	"errors"
	"fmt"
	"net/http"

	"sortie/controller/config"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/schema"
)

// ErrorBody is every error's JSON: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a code a program can test, the message
// a person reads (the CLI prints it as it would have without a server),
// and what the code needs besides.
type ErrorDetail struct {
	// Code is one of the codes of the README's API section.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Problems are a task's, path by path (invalid_task).
	Problems []schema.Problem `json:"problems,omitempty"`
	// Job and Owner name the job of a forbidden (its owner) or a
	// known_failure (the job that failed) error.
	Job   int64  `json:"job,omitempty"`
	Owner string `json:"owner,omitempty"`
	// Verb is what forbidden refused.
	Verb string `json:"verb,omitempty"`
	// Failure is the known failure that refused a launch.
	Failure *service.FailureView `json:"failure,omitempty"`
	// Limit is the size limit in bytes a too_large request passed.
	Limit int64 `json:"limit,omitempty"`
}

// Error codes, and the errors of the service each stands for.
const (
	CodeInvalidTask  = "invalid_task"  // 422
	CodeUsage        = "usage"         // 400
	CodeUnauthorized = "unauthorized"  // 401
	CodeForbidden    = "forbidden"     // 403
	CodeNotFound     = "not_found"     // 404
	CodeKnownFailure = "known_failure" // 409
	CodeConflict     = "conflict"      // 409: the state of the job refuses it
	CodeTooLarge     = "too_large"     // 413
	CodeBusy         = "busy"          // 503
	CodeInternal     = "internal"      // 500
	CodeNoRoute      = "no_route"      // 404, 405
	CodeDigest       = "digest_mismatch"
)

// Sentinels the conflict code carries in Verb-less form: the client turns
// them back into the service's errors, so that the CLI's messages and
// exit statuses stay what they are without a server.
var sentinels = map[string]error{
	"log_not_kept": service.ErrLogNotKept,
	"logs_removed": service.ErrLogsRemoved,
	"no_attempt":   service.ErrNoAttempt,
	"job_running":  service.ErrJobRunning,
	"not_kept":     service.ErrNotKept,
	"released":     service.ErrReleased,
}

// Sentinel returns the service error a conflict's reason stands for.
func Sentinel(reason string) error { return sentinels[reason] }

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
		fv := service.FailureView{InputKey: f.InputKey, JobID: f.JobID, TaskName: f.TaskName, Status: f.Status,
			ExitCodes: f.ExitCodes, LogPath: f.LogPath, RecordedAt: f.RecordedAt.UTC(), LogsRemovedAt: f.LogsRemovedAt}
		if f.Owner != "" {
			fv.Owner = &f.Owner
		}
		d.Code, d.Job, d.Owner, d.Failure = CodeKnownFailure, f.JobID, f.Owner, &fv
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
	for reason, s := range sentinels {
		if errors.Is(err, s) {
			d.Code, d.Verb = CodeConflict, reason
			return http.StatusConflict, d
		}
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
