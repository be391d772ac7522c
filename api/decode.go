package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// maxBodyBytes bounds every request body (413 payload_too_large beyond)
// but a plan import's, which maxPlanBodyBytes bounds: a plan of
// graph.MaxPlanItems items is several MiB, so with the limit of the other
// routes the item bound could never be met.
const (
	maxBodyBytes     = 1 << 20
	maxPlanBodyBytes = graph.MaxPlanRequestBytes
)

// bodyLimitKey holds a route's own body limit in the request's context
// (routeOpts.bodyLimit); without it, maxBodyBytes.
const bodyLimitKey = "workgraph.bodyLimit"

// bodyLimit is a route's body limit and what it is the limit of.
type bodyLimit struct {
	bytes int64
	of    string
}

var defaultBodyLimit = bodyLimit{bytes: maxBodyBytes, of: "a request"}

// withBodyLimit sets the body limit of the route it is mounted on.
func withBodyLimit(l bodyLimit) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(bodyLimitKey, l)
			return next(c)
		}
	}
}

func routeBodyLimit(c echo.Context) bodyLimit {
	if l, ok := c.Get(bodyLimitKey).(bodyLimit); ok {
		return l
	}
	return defaultBodyLimit
}

// Page sizes accepted by list routes.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// decode reads the request body strictly into v: an empty body decodes
// as {}. First input.JSONInto walks its tokens once, the one check of the
// text it carries (valid UTF-8, no NUL, nothing jsonb refuses) and of its
// shape (every key exactly a member of v's type, named by its whole path;
// a key given twice; null only where the member takes it); then
// encoding/json decodes it, refusing values of the wrong type, malformed
// JSON and trailing data. Every refusal is invalid_argument naming the
// field, so no handler sees such a body.
func decode(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeBody(body, v)
}

// decodeBody is decode of a body already read.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := input.JSONInto(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // JSONInto named any such key already
	if err := dec.Decode(v); err != nil {
		return decodeError(err, body)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wgerr.InvalidField("body", "trailing data after the JSON value")
	}
	return nil
}

// checkParams is the one check of the text a request carries outside its
// body, run on every /v1 route before anything looks at it: the query
// string and each parameter within their bounds (checkQuery), and path
// parameters, query parameter names and values, and the Idempotency-Key
// header valid UTF-8 without NUL (PostgreSQL's text refuses both).
func checkParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := checkQuery(c.Request()); err != nil {
			return err
		}
		for i, name := range c.ParamNames() {
			if i < len(c.ParamValues()) {
				if err := input.Text(name, c.ParamValues()[i]); err != nil {
					return err
				}
			}
		}
		if err := input.Values(c.QueryParams()); err != nil {
			return err
		}
		if err := input.Text(IdempotencyHeader, c.Request().Header.Get(IdempotencyHeader)); err != nil {
			return err
		}
		return next(c)
	}
}

// readBody returns the whole request body, refusing bodies over the limit,
// and leaves a fresh copy in the request for later readers.
func readBody(c echo.Context) ([]byte, error) {
	req := c.Request()
	limit := routeBodyLimit(c)
	if req.ContentLength > limit.bytes {
		return nil, tooLarge(limit)
	}
	if req.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, limit.bytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		return nil, wgerr.InvalidField("body", "could not be read")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	shrinkBodyHold(c, len(body))
	return body, nil
}

func tooLarge(l bodyLimit) error {
	return wgerr.New(wgerr.CodePayloadTooLarge, "the request body exceeds %s, the body limit of %s", mib(l.bytes), l.of)
}

// mib writes a body limit as the documents give it: "1 MiB (1048576 bytes)".
func mib(n int64) string {
	return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
}

// decodeError turns encoding/json's refusal of body into invalid_argument
// naming the field by its whole path.
func decodeError(err error, body []byte) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			// The body as a whole: an object, or an array for the
			// batches (completions, heartbeats).
			want := "object"
			if k := typeErr.Type.Kind().String(); k == "slice" || k == "array" {
				want = "array"
			}
			return wgerr.InvalidField("body", "must be a JSON %s", want)
		}
		if path := input.PathAt(body, typeErr.Offset); path != "" {
			field = path // with the indexes of arrays, which Field lacks
		}
		if lo, hi, ok := intRange(typeErr.Type); ok {
			if n, isNumber := strings.CutPrefix(typeErr.Value, "number "); isNumber && integral(n) {
				return wgerr.InvalidField(field, "%s is out of range: must be an integer from %d to %d", n, lo, hi)
			}
		}
		return wgerr.InvalidField(field, "must be %s, got %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntax):
		return wgerr.InvalidField("body", "malformed JSON at offset %d", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return wgerr.InvalidField("body", "malformed JSON: unexpected end of input")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(name)
		if uerr != nil {
			field = strings.Trim(name, `"`)
		}
		return wgerr.InvalidField(field, "unknown field")
	}
	return wgerr.InvalidField("body", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// intRange is the range of an integer type (for an unsigned one of 64
// bits, up to the largest int64, which is what the API's members hold).
func intRange(t reflect.Type) (lo, hi int64, ok bool) {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return -1 << (bits - 1), 1<<(bits-1) - 1, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if t.Bits() == 64 {
			return 0, math.MaxInt64, true
		}
		return 0, 1<<t.Bits() - 1, true
	}
	return 0, 0, false
}

// integral reports whether the JSON number n is a whole number (1e12 is,
// 1.5 is not), whatever its size.
func integral(n string) bool {
	r, ok := new(big.Rat).SetString(n)
	return ok && r.IsInt()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}

// requireEpoch checks the fencing epoch every lease mutation must present.
func requireEpoch(epoch *int64) (int64, error) {
	if epoch == nil {
		return 0, wgerr.InvalidField("epoch", "is required")
	}
	if *epoch < 1 {
		return 0, wgerr.InvalidField("epoch", "must be an integer >= 1, got %d", *epoch)
	}
	return *epoch, nil
}

// pageSize reads the page size of a list route: "limit" (or its alias
// "page_size"), 1..500, default 50.
func pageSize(c echo.Context) (int, error) {
	name, s := "limit", c.QueryParam("limit")
	if alias := c.QueryParam("page_size"); alias != "" {
		if s != "" {
			return 0, wgerr.InvalidField("page_size", "is an alias of limit; give one of them")
		}
		name, s = "page_size", alias
	}
	if s == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, wgerr.InvalidField(name, "must be an integer between 1 and %d, got %q", maxPageSize, s)
	}
	return n, nil
}

// queryInt reads an optional integer query parameter.
func queryInt(c echo.Context, name string) (*int, error) {
	s := c.QueryParam(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, wgerr.InvalidField(name, "must be an integer, got %q", s)
	}
	return &n, nil
}

// queryID reads an optional UUID query parameter (a filter by id).
func queryID(c echo.Context, name string) (*uuid.UUID, error) {
	s := c.QueryParam(name)
	if s == "" {
		return nil, nil
	}
	id, err := parseID(name, s)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// noQuery refuses any query parameter on a route that writes (POST, PUT,
// PATCH, DELETE): their input is the body, and a parameter would be
// ignored, POST .../plans?dry_run=true creating the plan.
func noQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for name := range c.QueryParams() {
			return wgerr.InvalidField(name, "a %s takes no query parameters: its input goes in the JSON body", c.Request().Method)
		}
		return next(c)
	}
}

// jsonBody refuses (415 unsupported_media_type), before any of it is read,
// a request body declared as something other than JSON: its Content-Type,
// when the request carries one and a body, must be application/json or
// application/<anything>+json, with any parameters (charset=utf-8). A body
// sent without a Content-Type is read as JSON. A form or a multipart body
// decoded as JSON would fail anyway, with an error about JSON the sender
// did not know it had sent; this names the header to fix.
func jsonBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ct := req.Header.Get(echo.HeaderContentType)
		if ct == "" || req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
			return next(c)
		}
		if !isJSONMediaType(ct) {
			return wgerr.New(wgerr.CodeUnsupportedMediaType,
				"the body is declared as %q: send JSON, with Content-Type: application/json", truncate(ct, 100))
		}
		return next(c)
	}
}

// isJSONMediaType reports whether a Content-Type value names JSON:
// application/json or application/*+json (RFC 6839), parameters allowed.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || (strings.HasSuffix(sub, "+json") && len(sub) > len("+json")))
}

// truncate is s cut to at most n bytes (on a rune boundary), marked with
// "…" when cut: a header quoted in a problem stays short.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// onlyQuery refuses query parameters a route does not know.
func onlyQuery(c echo.Context, known ...string) error {
	for name := range c.QueryParams() {
		ok := false
		for _, k := range known {
			if name == k {
				ok = true
				break
			}
		}
		if !ok {
			return wgerr.InvalidField(name, "unknown query parameter (known: %s)", strings.Join(known, ", "))
		}
	}
	return nil
}
