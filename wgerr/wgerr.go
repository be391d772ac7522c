// Package wgerr defines the error kinds every workgraph package speaks.
//
// Domain packages return *Error values (or wrap them); HTTPStatus maps a
// Code to its HTTP status in one table, read by the API and the web pages. Tests compare
// with errors.Is against the sentinel of a kind, e.g.
//
//	errors.Is(err, wgerr.LeaseLost)
//
// which matches any *Error carrying that code, whatever its message.
package wgerr

import (
	"errors"
	"fmt"
)

// Code is a machine-readable error kind. Its string is the problem+json
// "code" the API answers with.
type Code string

// The kinds of error. Keep in step with the table in status.go.
const (
	CodeInvalid           Code = "invalid_argument"
	CodeUnauthenticated   Code = "unauthenticated"
	CodeForbidden         Code = "forbidden"
	CodeNotFound          Code = "not_found"
	CodeAlreadyExists     Code = "already_exists"
	CodeLeaseLost         Code = "lease_lost"
	CodeConflictingResult Code = "conflicting_result"
	CodeDependencyCycle   Code = "dependency_cycle"
	CodeConflict          Code = "conflict"
	// CodeBlocked: a completion of an item that waits for unfinished work
	// (a dependency or a child added while it was leased); the lease
	// stays live.
	CodeBlocked Code = "blocked"
	// CodeDepthLimit: a decomposition would pass the depth limit of a
	// budget over the item.
	CodeDepthLimit Code = "depth_limit"
	// CodeInProgress: the first request with this Idempotency-Key is still
	// running; retry after a moment.
	CodeInProgress Code = "request_in_progress"
	// CodeOutcomeUnknown: the first request with this Idempotency-Key took
	// effect but its answer was lost; it is never run again.
	CodeOutcomeUnknown Code = "outcome_unknown"
	// CodeNoMatch: a claim's capabilities cover no ready item's
	// requirements while ready items exist; waiting would not help.
	CodeNoMatch Code = "no_match"
	// CodeTooManyOpenRequests: a lease already has as many open
	// non-blocking attention requests as it may (lease.MaxOpenQuestions);
	// one must be answered or dismissed first.
	CodeTooManyOpenRequests Code = "too_many_open_requests"
	// CodeEventsPruned: a read of the event log resumed after a number
	// below the retention horizon: events after it were deleted, so the
	// read would have a gap. Resume after the horizon it names.
	CodeEventsPruned Code = "events_pruned"
	// CodeMethodNotAllowed: the path exists, for other methods (see Allow).
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodePayloadTooLarge  Code = "payload_too_large"
	// CodeHeaderTooLarge: the request line and headers exceed the server's
	// bound.
	CodeHeaderTooLarge Code = "header_too_large"
	// CodeUnsupportedMediaType: a request body declared (Content-Type) as
	// something other than JSON.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	CodeRateLimited          Code = "rate_limited"
	CodeUnavailable          Code = "unavailable"
	CodeInternal             Code = "internal"
)

// Error is a workgraph error: a kind, a message fit to show the caller, and
// optional structured details (for example the cycle a dependency would
// close). Field names the input field at fault, if any.
type Error struct {
	Code    Code
	Message string
	Field   string
	Details map[string]any
	// Err is an underlying cause kept for logs; never shown to callers.
	Err error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same code, so that the
// sentinels below match any error of their kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// Sentinels, one per kind, for errors.Is.
var (
	Invalid              = &Error{Code: CodeInvalid}
	Unauthenticated      = &Error{Code: CodeUnauthenticated}
	Forbidden            = &Error{Code: CodeForbidden}
	NotFound             = &Error{Code: CodeNotFound}
	AlreadyExists        = &Error{Code: CodeAlreadyExists}
	LeaseLost            = &Error{Code: CodeLeaseLost}
	ConflictingResult    = &Error{Code: CodeConflictingResult}
	DependencyCycle      = &Error{Code: CodeDependencyCycle}
	Conflict             = &Error{Code: CodeConflict}
	Blocked              = &Error{Code: CodeBlocked}
	InProgress           = &Error{Code: CodeInProgress}
	OutcomeUnknown       = &Error{Code: CodeOutcomeUnknown}
	EventsPruned         = &Error{Code: CodeEventsPruned}
	MethodNotAllowed     = &Error{Code: CodeMethodNotAllowed}
	PayloadTooLarge      = &Error{Code: CodePayloadTooLarge}
	UnsupportedMediaType = &Error{Code: CodeUnsupportedMediaType}
	RateLimited          = &Error{Code: CodeRateLimited}
	Unavailable          = &Error{Code: CodeUnavailable}
	Internal             = &Error{Code: CodeInternal}
)

// New returns an error of the given kind with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField returns an invalid_argument error naming the input field.
func InvalidField(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or
// CodeInternal when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
