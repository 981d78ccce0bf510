package gcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"

	"sortie/provision"
)

// isCapacityCode reports whether an operation error code (or an HTTP error
// reason) means "not here, not now": another zone or region may have room.
func isCapacityCode(code string) bool {
	c := strings.ToUpper(code)
	for _, part := range []string{
		"RESOURCE_POOL_EXHAUSTED", // ZONE_..., ZONE_..._WITH_DETAILS, REGION_...
		"QUOTA_EXCEEDED",          // also QUOTAEXCEEDED as an HTTP reason
		"QUOTAEXCEEDED",
		"RESOURCE_AVAILABILITY",
		"STOCKOUT",
		"RESOURCEEXHAUSTED",
	} {
		if strings.Contains(c, part) {
			return true
		}
	}
	// The machine type or a feature of the request is not offered in this
	// zone; another zone may offer it.
	return c == "UNSUPPORTED_OPERATION"
}

// isPrechecksCode reports whether an operation error code means the request
// can never succeed as written.
func isPrechecksCode(code string) bool {
	switch strings.ToUpper(code) {
	case "INVALID_ARGUMENT", "INVALID_FIELD_VALUE", "INVALID_USAGE", "BAD_REQUEST",
		"RESOURCE_NOT_FOUND", "NOT_FOUND", "PERMISSION_DENIED", "PERMISSIONS_ERROR",
		"FORBIDDEN", "UNAUTHENTICATED", "CONDITION_NOT_MET", "FAILED_PRECONDITION":
		return true
	}
	return false
}

// operationError is the error a finished operation carries, classified, or
// nil when it succeeded. The library's Operation.Wait returns nil for an
// operation that finished with an error unless it also set an HTTP error
// status, so every caller reads the error from the operation itself.
func operationError(op *computepb.Operation) error {
	items := op.GetError().GetErrors()
	code := op.GetHttpErrorStatusCode()
	if len(items) == 0 && (code == 0 || (code >= 200 && code < 300)) {
		return nil
	}
	var msgs []string
	capacity, prechecks := false, false
	for _, e := range items {
		msgs = append(msgs, e.GetCode()+": "+e.GetMessage())
		capacity = capacity || isCapacityCode(e.GetCode())
		prechecks = prechecks || isPrechecksCode(e.GetCode())
	}
	if len(msgs) == 0 {
		msgs = append(msgs, fmt.Sprintf("HTTP %d: %s", code, op.GetHttpErrorMessage()))
	}
	err := fmt.Errorf("operation %s (%s %s) failed: %s", op.GetName(), op.GetOperationType(),
		lastSegment(op.GetTargetLink()), strings.Join(msgs, "; "))
	switch {
	case capacity:
		return provision.Capacity(err)
	case prechecks, code == http.StatusBadRequest, code == http.StatusForbidden,
		code == http.StatusNotFound, code == http.StatusUnauthorized:
		return provision.Prechecks(err)
	}
	return err
}

// apiError is the HTTP error inside err, or nil.
func apiError(err error) *googleapi.Error {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge
	}
	return nil
}

// isNotFound reports whether err is the API's 404.
func isNotFound(err error) bool {
	ge := apiError(err)
	return ge != nil && ge.Code == http.StatusNotFound
}

// isAlreadyExists reports whether err is the API's 409 for a name taken.
func isAlreadyExists(err error) bool {
	ge := apiError(err)
	return ge != nil && ge.Code == http.StatusConflict
}

// reasons lists the error reasons of an HTTP error.
func reasons(ge *googleapi.Error) []string {
	var out []string
	for _, e := range ge.Errors {
		out = append(out, e.Reason)
	}
	return out
}

// classify wraps an error from an API call as capacity or prechecks when
// the API's answer says so. A 404 counts as prechecks: callers for whom a
// missing resource is normal (get, delete) test isNotFound first.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var already *provision.Error
	if errors.As(err, &already) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ge := apiError(err)
	if ge == nil {
		return err
	}
	for _, r := range append(reasons(ge), ge.Message) {
		if isCapacityCode(r) {
			return provision.Capacity(err)
		}
	}
	for _, r := range reasons(ge) {
		switch r {
		case "rateLimitExceeded", "userRateLimitExceeded", "resourceNotReady", "backendError":
			return err
		}
	}
	switch ge.Code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusBadRequest:
		return provision.Prechecks(err)
	}
	return err
}
