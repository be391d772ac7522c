package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// problemTypeBase prefixes every problem "type" URI; the code follows.
const problemTypeBase = "https://workgraph.dev/problems/"

// codeForStatus maps the statuses of Echo's own errors (no route, method not
// allowed, ...) to a code of the table.
func codeForStatus(status int) wgerr.Code {
	switch {
	case status == http.StatusUnauthorized:
		return wgerr.CodeUnauthenticated
	case status == http.StatusForbidden:
		return wgerr.CodeForbidden
	case status == http.StatusNotFound:
		return wgerr.CodeNotFound
	case status == http.StatusMethodNotAllowed:
		return wgerr.CodeMethodNotAllowed
	case status == http.StatusConflict:
		return wgerr.CodeConflict
	case status == http.StatusRequestEntityTooLarge:
		return wgerr.CodePayloadTooLarge
	case status == http.StatusUnsupportedMediaType:
		return wgerr.CodeUnsupportedMediaType
	case status == http.StatusRequestHeaderFieldsTooLarge:
		return wgerr.CodeHeaderTooLarge
	case status == http.StatusTooManyRequests:
		return wgerr.CodeRateLimited
	case status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
		return wgerr.CodeUnavailable
	case status >= 400 && status < 500:
		return wgerr.CodeInvalid
	default:
		return wgerr.CodeInternal
	}
}

// Problem is an RFC 9457 problem document. Extras (field, cycle, errors,
// ...) are written beside the standard members.
type Problem struct {
	Type   string
	Title  string
	Status int
	Detail string
	Code   wgerr.Code
	Extras map[string]any
}

// MarshalJSON writes the standard members and the extras in one object.
func (p Problem) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(p.Extras)+5)
	for k, v := range p.Extras {
		m[k] = v
	}
	m["type"] = p.Type
	m["title"] = p.Title
	m["status"] = p.Status
	m["detail"] = p.Detail
	m["code"] = p.Code
	return json.Marshal(m)
}

// problemFor turns any error into the problem the caller sees. Errors of
// kind internal, and errors of no kind, carry no detail beyond "internal
// error"; logInternal reports whether the cause must be logged.
func problemFor(err error) (p Problem, logInternal bool) {
	var (
		we *wgerr.Error
		he *echo.HTTPError
	)
	switch {
	case errors.As(err, &we):
		code, status := wgerr.HTTPStatus(we)
		if code == wgerr.CodeInternal {
			return internalProblem(), true
		}
		p = Problem{Type: problemTypeBase + string(code), Title: wgerr.Title(code), Status: status, Detail: we.Message, Code: code}
		if we.Field != "" || len(we.Details) > 0 {
			p.Extras = make(map[string]any, len(we.Details)+1)
			for k, v := range we.Details {
				p.Extras[k] = v
			}
			if we.Field != "" {
				p.Extras["field"] = we.Field
			}
		}
		if p.Detail == "" {
			p.Detail = p.Title
		}
		return p, false
	case errors.As(err, &he):
		code := codeForStatus(he.Code)
		if code == wgerr.CodeInternal {
			return internalProblem(), true
		}
		p = Problem{Type: problemTypeBase + string(code), Title: wgerr.Title(code), Status: he.Code, Detail: echoDetail(he), Code: code}
		return p, false
	default:
		return internalProblem(), true
	}
}

// unknown gives an error of no kind to the storage layer's translation
// (Config.TranslateUnknown), so that a driver error no service translated
// (a lost connection) is still answered by its kind (503 unavailable), not
// as a 500.
func (a *API) unknown(err error) error {
	var (
		we *wgerr.Error
		he *echo.HTTPError
	)
	if err == nil || a.translate == nil || errors.As(err, &we) || errors.As(err, &he) {
		return err
	}
	return a.translate(err)
}

func internalProblem() Problem {
	return Problem{Type: problemTypeBase + string(wgerr.CodeInternal), Title: wgerr.Title(wgerr.CodeInternal), Status: http.StatusInternalServerError, Detail: "internal error", Code: wgerr.CodeInternal}
}

func echoDetail(he *echo.HTTPError) string {
	switch he.Code {
	case http.StatusNotFound:
		return "no such route"
	case http.StatusMethodNotAllowed:
		return "the method is not allowed on this route"
	case http.StatusRequestEntityTooLarge:
		return tooLarge(defaultBodyLimit).Error()
	}
	if s, ok := he.Message.(string); ok && s != "" {
		return strings.ToLower(s[:1]) + s[1:]
	}
	return http.StatusText(he.Code)
}

// writeProblem answers err as application/problem+json. Unknown and internal
// errors are logged with their cause and answered without internals; the
// line names the request id through the request's context (package logs),
// as the problem's request_id does.
func writeProblem(c echo.Context, log *slog.Logger, err error) {
	if c.Response().Committed {
		return
	}
	p, logIt := problemFor(err)
	id := requestID(c)
	telemetry.Problem(c.Request().Context(), string(p.Code), p.Status)
	if logIt {
		log.ErrorContext(c.Request().Context(), "internal error",
			"method", c.Request().Method, "path", c.Request().URL.Path,
			"err", err, "cause", causeOf(err))
	} else if p.Code == wgerr.CodeUnavailable {
		log.WarnContext(c.Request().Context(), "unavailable",
			"method", c.Request().Method, "path", c.Request().URL.Path,
			"err", err, "cause", causeOf(err))
	}
	if id != "" {
		if p.Extras == nil {
			p.Extras = map[string]any{}
		}
		p.Extras["request_id"] = id
	}
	if wgerr.RetryLater(p.Code) && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", "1")
	}
	if p.Code == wgerr.CodeUnauthenticated {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="workgraph"`)
	}
	body, mErr := json.Marshal(p)
	if mErr != nil {
		body = []byte(`{"type":"` + problemTypeBase + `internal","title":"Internal error","status":500,"detail":"internal error","code":"internal"}`)
		p.Status = http.StatusInternalServerError
	}
	if c.Request().Method == http.MethodHead {
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		c.Response().WriteHeader(p.Status)
		return
	}
	_ = c.Blob(p.Status, "application/problem+json", body)
}

// causeOf is the innermost error of err's chain: what the log needs when
// err itself says only "internal error".
func causeOf(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// ErrorHandler answers errors of /v1 requests as problem+json and hands every
// other path to next (the web UI's or Echo's default handler).
func (a *API) ErrorHandler(next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if isAPIPath(c.Request().URL.Path) {
			writeProblem(c, a.log, a.unknown(err))
			return
		}
		next(err, c)
	}
}

// isAPIPath reports whether the API serves p: /v1 and below, and the
// well-known fence keys document (fence.KeysPath), whose answers,
// refusals included, are the API's.
func isAPIPath(p string) bool {
	return p == "/v1" || strings.HasPrefix(p, "/v1/") || p == fence.KeysPath
}
