package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// Problem codes the server answers with (the "code" member of a
// problem+json document).
const (
	CodeInvalidArgument   = "invalid_argument"
	CodeUnauthenticated   = "unauthenticated"
	CodeForbidden         = "forbidden"
	CodeNotFound          = "not_found"
	CodeAlreadyExists     = "already_exists"
	CodeLeaseLost         = "lease_lost"
	CodeConflictingResult = "conflicting_result"
	CodeDependencyCycle   = "dependency_cycle"
	CodeConflict          = "conflict"
	// CodeBlocked: a completion of an item that gained a dependency on an
	// unfinished item, or an open child, while it was leased; nothing
	// changed and the lease is still held (the problem's "dependencies"
	// and "children" list the unfinished items). Heartbeat, complete once
	// that work is done, or release the lease. Also a DecisionDone on such
	// an item (Decide): nothing changed and the request is still open.
	CodeBlocked = "blocked"
	// CodeDepthLimit: a decomposition would pass the depth limit of a
	// budget over the item.
	CodeDepthLimit = "depth_limit"
	// CodeNoMatch: the claim's capabilities cover no ready item's requires
	// (the problem's details name the missing ones); waiting will not help.
	CodeNoMatch = "no_match"
	// CodeTooManyOpenRequests: the lease already has as many open
	// non-blocking attention requests as it may (20); nothing changed.
	// Wait for an answer on a heartbeat, or ask a blocking question.
	CodeTooManyOpenRequests = "too_many_open_requests"
	// CodeRequestInProgress: the first request with the same
	// Idempotency-Key is still running; the client retries it.
	CodeRequestInProgress = "request_in_progress"
	// CodeOutcomeUnknown: the first request with the same Idempotency-Key
	// took effect but its answer was lost (its server died); it will not
	// run again. Look up the state, then send a new request.
	CodeOutcomeUnknown = "outcome_unknown"
	// CodeEventsPruned: an events read or stream resumed after a number
	// below the retention horizon; the events after it were deleted. The
	// problem's "pruned_through" is where to resume.
	CodeEventsPruned     = "events_pruned"
	CodeMethodNotAllowed = "method_not_allowed"
	CodePayloadTooLarge  = "payload_too_large"
	// CodeHeaderTooLarge: the request line and headers exceed the server's
	// bound (256 KiB).
	CodeHeaderTooLarge = "header_too_large"
	// CodeUnsupportedMediaType: the body was declared (Content-Type) as
	// something other than JSON; this client always sends JSON.
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRateLimited          = "rate_limited"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
)

// Error is a failure answered by the server: an RFC 9457 problem document.
// Code is the machine-readable kind; Detail says what went wrong in words.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is the problem's "code" (one of the Code* constants).
	Code string
	// Type, Title and Detail are the problem's members of those names.
	Type, Title, Detail string
	// Extensions holds any other members of the problem document (for
	// example the cycle a dependency would close, or the field at fault).
	Extensions map[string]json.RawMessage
	// Method and Path name the request that failed.
	Method, Path string
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if msg == "" {
		msg = e.Code
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", msg, e.Code, e.Status)
}

// Is reports whether target is an *Error with the same Code, so that the
// Err* sentinels match every error of their kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// RequestID is the server's id of the failed request (the problem's
// request_id), to quote when reporting a server error; empty if none.
func (e *Error) RequestID() string {
	var id string
	e.Extension("request_id", &id)
	return id
}

// Extension decodes the problem member name into v and reports whether it
// was present.
func (e *Error) Extension(name string, v any) bool {
	raw, ok := e.Extensions[name]
	if !ok {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Sentinels for errors.Is, one per problem code.
var (
	ErrInvalidArgument      = &Error{Code: CodeInvalidArgument}
	ErrUnauthenticated      = &Error{Code: CodeUnauthenticated}
	ErrForbidden            = &Error{Code: CodeForbidden}
	ErrNotFound             = &Error{Code: CodeNotFound}
	ErrAlreadyExists        = &Error{Code: CodeAlreadyExists}
	ErrLeaseLost            = &Error{Code: CodeLeaseLost}
	ErrConflictingResult    = &Error{Code: CodeConflictingResult}
	ErrDependencyCycle      = &Error{Code: CodeDependencyCycle}
	ErrConflict             = &Error{Code: CodeConflict}
	ErrBlocked              = &Error{Code: CodeBlocked}
	ErrDepthLimit           = &Error{Code: CodeDepthLimit}
	ErrNoMatch              = &Error{Code: CodeNoMatch}
	ErrTooManyOpenRequests  = &Error{Code: CodeTooManyOpenRequests}
	ErrRequestInProgress    = &Error{Code: CodeRequestInProgress}
	ErrOutcomeUnknown       = &Error{Code: CodeOutcomeUnknown}
	ErrEventsPruned         = &Error{Code: CodeEventsPruned}
	ErrMethodNotAllowed     = &Error{Code: CodeMethodNotAllowed}
	ErrPayloadTooLarge      = &Error{Code: CodePayloadTooLarge}
	ErrUnsupportedMediaType = &Error{Code: CodeUnsupportedMediaType}
	ErrRateLimited          = &Error{Code: CodeRateLimited}
	ErrUnavailable          = &Error{Code: CodeUnavailable}
	ErrInternal             = &Error{Code: CodeInternal}
)

// ErrNothingReady is returned by Claim when no item was ready to claim
// (HTTP 204), after waiting up to the requested wait. It is an expected
// outcome, not a failure of the server.
var ErrNothingReady = errors.New("nothing is ready to claim")

// Unreachable reports whether err is a transport failure: the server could
// not be reached or the connection broke before an answer arrived.
func Unreachable(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// NoServer reports whether err says that no server is there at all: the
// connection was refused (nothing listens at the address) or the host name
// does not exist. A timeout, a reset or an answer is not this.
func NoServer(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// problemBody is the wire form of a problem+json answer.
type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// decodeProblem builds an *Error from an error answer. Answers that are not
// problem documents (a proxy's HTML page) still give an Error whose Code is
// derived from the status.
func decodeProblem(method, path string, status int, body []byte) *Error {
	e := &Error{Status: status, Method: method, Path: path}
	var p problemBody
	if json.Unmarshal(body, &p) == nil {
		e.Type, e.Title, e.Detail, e.Code = p.Type, p.Title, p.Detail, p.Code
		var all map[string]json.RawMessage
		if json.Unmarshal(body, &all) == nil {
			for _, k := range []string{"type", "title", "status", "detail", "code"} {
				delete(all, k)
			}
			if len(all) > 0 {
				e.Extensions = all
			}
		}
	} else if s := strings.TrimSpace(string(body)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		e.Detail = s
	}
	if e.Code == "" {
		e.Code = codeForStatus(status)
	}
	return e
}

func codeForStatus(status int) string {
	switch status {
	case 400, 422:
		return CodeInvalidArgument
	case 401:
		return CodeUnauthenticated
	case 403:
		return CodeForbidden
	case 404:
		return CodeNotFound
	case 405:
		return CodeMethodNotAllowed
	case 409:
		return CodeConflict
	case 413:
		return CodePayloadTooLarge
	case 415:
		return CodeUnsupportedMediaType
	case 431:
		return CodeHeaderTooLarge
	case 429:
		return CodeRateLimited
	case 502, 503, 504:
		return CodeUnavailable
	}
	return CodeInternal
}
