package api

import "sortie/controller/contract"

// The API's objects and error codes are package contract's, which its
// client speaks without this package; these names are the same.
type (
	ErrorBody    = contract.ErrorBody
	ErrorDetail  = contract.ErrorDetail
	LaunchResult = contract.LaunchResult
	RetryResults = contract.RetryResults
	Cancelled    = contract.Cancelled
	Forgotten    = contract.Forgotten
	LogEvent     = contract.LogEvent
	LogEnd       = contract.LogEnd
	BlobResult   = contract.BlobResult
)

// Error codes.
const (
	CodeInvalidTask  = contract.CodeInvalidTask
	CodeUsage        = contract.CodeUsage
	CodeUnauthorized = contract.CodeUnauthorized
	CodeForbidden    = contract.CodeForbidden
	CodeNotFound     = contract.CodeNotFound
	CodeKnownFailure = contract.CodeKnownFailure
	CodeConflict     = contract.CodeConflict
	CodeTooLarge     = contract.CodeTooLarge
	CodeBusy         = contract.CodeBusy
	CodeInternal     = contract.CodeInternal
	CodeNoRoute      = contract.CodeNoRoute
	CodeDigest       = contract.CodeDigest
)
