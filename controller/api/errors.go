package api

import (
	"errors"
	"fmt"
	"net/http"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/schema"
)

// Detail maps an error of the service to the status and body the API
// answers it with: the dashboard shows the same problems.
func Detail(err error) (int, contract.ErrorDetail) { return detail(err) }

// WriteError answers err as the API does: its status, {"error": {...}}.
func WriteError(w http.ResponseWriter, err error) error {
	status, d := detail(err)
	return writeJSON(w, status, contract.ErrorBody{Error: d})
}

// detail maps an error of the service to its status and body.
func detail(err error) (int, contract.ErrorDetail) {
	var ve *schema.ValidationError
	var ue *contract.UsageError
	var kf *contract.KnownFailureError
	var be *contract.BudgetError
	var fe *contract.ForbiddenError
	var ae *contract.AdminError
	var ce *config.Error
	var he *httpError
	d := contract.ErrorDetail{Message: err.Error()}
	switch {
	case errors.As(err, &he):
		d.Code, d.Limit = he.code, he.limit
		return he.status, d
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
	case errors.Is(err, contract.ErrNoSuchJob), errors.Is(err, store.ErrNotFound):
		d.Code = contract.CodeNotFound
		return http.StatusNotFound, d
	case errors.Is(err, store.ErrBusy):
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
