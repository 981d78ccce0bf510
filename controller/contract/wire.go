package contract

import (
	"errors"

	"sortie/schema"
)

// The API's objects: what its routes answer besides the service's views.

// ErrorBody is every error's JSON: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a code a program can test, the message
// a person reads (the CLI prints it as it would have without a server),
// and what the code needs besides.
type ErrorDetail struct {
	// Code is one of the error codes of the API (controller/README.md, The API).
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
	Failure *FailureView `json:"failure,omitempty"`
	// Limit is the size limit in bytes a too_large request passed.
	Limit int64 `json:"limit,omitempty"`
	// Budget is the monthly budget a budget_spent launch ran into.
	Budget *BudgetDetail `json:"budget,omitempty"`
}

// BudgetDetail is the budget_spent error's figures: whose budget, what
// they spent this month and what their budget is, in dollars.
type BudgetDetail struct {
	User     string  `json:"user"`
	Spent    float64 `json:"spent"`
	Budget   float64 `json:"budget"`
	Estimate bool    `json:"estimate"`
	Month    string  `json:"month"`
}

// Error codes, and the errors of the service each stands for.
const (
	CodeInvalidTask  = "invalid_task"  // 422
	CodeUsage        = "usage"         // 400
	CodeUnauthorized = "unauthorized"  // 401
	CodeForbidden    = "forbidden"     // 403
	CodeNotFound     = "not_found"     // 404
	CodeKnownFailure = "known_failure" // 409
	CodeBudgetSpent  = "budget_spent"  // 402: the owner's monthly budget is spent
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
	"log_not_kept": ErrLogNotKept,
	"logs_removed": ErrLogsRemoved,
	"no_attempt":   ErrNoAttempt,
	"job_running":  ErrJobRunning,
	"not_kept":     ErrNotKept,
	"released":     ErrReleased,
	"not_waiting":  ErrNotWaiting,
}

// Sentinel returns the service error a conflict's reason stands for.
func Sentinel(reason string) error { return sentinels[reason] }

// ConflictReason is the reason a conflict error carries for err: the
// sentinel it wraps; "" when it wraps none.
func ConflictReason(err error) string {
	for reason, s := range sentinels {
		if errors.Is(err, s) {
			return reason
		}
	}
	return ""
}

// LaunchResult is POST /v1/jobs's answer: the job, and the warnings the
// CLI prints (fields sortie accepts and ignores).
type LaunchResult struct {
	Job      *JobView `json:"job"`
	Warnings []string `json:"warnings"`
}

// RetryResults is POST /v1/jobs/retry's answer.
type RetryResults struct {
	Retries  []RetryResult `json:"retries"`
	Warnings []string      `json:"warnings"`
}

// Cancelled is a cancel's answer: the ids marked.
type Cancelled struct {
	Cancelled []int64 `json:"cancelled"`
}

// Forgotten is a forget's answer: the key, or how many.
type Forgotten struct {
	Key   string `json:"key,omitempty"`
	Count int64  `json:"count"`
}

// LogEvent is one line of GET /v1/jobs/{id}/logs, which streams
// newline-delimited JSON (application/x-ndjson), flushed line by line:
// a piece of log (Text, or Bytes where it is not UTF-8), the start of an
// attempt's log when following (Attempt), a step of the job when following
// (Step), and last End, with the error
// that ended the listing (a node's log not kept, logs removed...) or none.
type LogEvent struct {
	Text    string       `json:"text,omitempty"`
	Bytes   []byte       `json:"bytes,omitempty"`
	Attempt *AttemptView `json:"attempt,omitempty"`
	Step    string       `json:"step,omitempty"`
	End     *LogEnd      `json:"end,omitempty"`
}

// LogEnd closes a log stream.
type LogEnd struct {
	Error *ErrorDetail `json:"error"`
}

// BlobResult is PUT /v1/blobs/{sha256}'s answer.
type BlobResult struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Stored is false when the server had the blob already.
	Stored bool `json:"stored"`
}
