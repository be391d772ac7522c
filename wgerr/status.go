package wgerr

import "net/http"

// answer is how one code is answered over HTTP.
type answer struct {
	status int
	title  string
}

// answers is THE table: every error code, the HTTP status it is answered
// with and its title. The API (problem+json) and the web pages both read it
// through HTTPStatus and Title, so an error means the same status on both.
var answers = map[Code]answer{
	CodeInvalid:              {http.StatusBadRequest, "Invalid argument"},
	CodeUnauthenticated:      {http.StatusUnauthorized, "Unauthenticated"},
	CodeForbidden:            {http.StatusForbidden, "Forbidden"},
	CodeNotFound:             {http.StatusNotFound, "Not found"},
	CodeAlreadyExists:        {http.StatusConflict, "Already exists"},
	CodeLeaseLost:            {http.StatusConflict, "Lease lost"},
	CodeConflictingResult:    {http.StatusConflict, "Conflicting result"},
	CodeDependencyCycle:      {http.StatusConflict, "Dependency cycle"},
	CodeConflict:             {http.StatusConflict, "Conflict"},
	CodeBlocked:              {http.StatusConflict, "Blocked"},
	CodeDepthLimit:           {http.StatusConflict, "Depth limit"},
	CodeInProgress:           {http.StatusConflict, "Request in progress"},
	CodeOutcomeUnknown:       {http.StatusConflict, "Outcome unknown"},
	CodeNoMatch:              {http.StatusConflict, "No match"},
	CodeTooManyOpenRequests:  {http.StatusConflict, "Too many open requests"},
	CodeEventsPruned:         {http.StatusGone, "Events pruned"},
	CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload too large"},
	CodeHeaderTooLarge:       {http.StatusRequestHeaderFieldsTooLarge, "Header too large"},
	CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	CodeRateLimited:          {http.StatusTooManyRequests, "Rate limited"},
	CodeUnavailable:          {http.StatusServiceUnavailable, "Unavailable"},
	CodeInternal:             {http.StatusInternalServerError, "Internal error"},
}

// HTTPStatus is the one mapping from an error to its HTTP answer: the code
// of the first *Error in err's chain and the status of that code. An error
// of no kind, or of a code outside the table, is internal (500).
func HTTPStatus(err error) (Code, int) {
	code := CodeOf(err)
	a, ok := answers[code]
	if !ok {
		code, a = CodeInternal, answers[CodeInternal]
	}
	return code, a.status
}

// Title is the short human title of code ("Lease lost"), or that of
// internal for a code outside the table.
func Title(code Code) string {
	if a, ok := answers[code]; ok {
		return a.title
	}
	return answers[CodeInternal].title
}

// RetryLater reports whether an answer with code tells the caller to come
// back after a moment (Retry-After): rate_limited and unavailable.
func RetryLater(code Code) bool { return code == CodeRateLimited || code == CodeUnavailable }
