package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// maxBodyBytes bounds every request body (413 payload_too_large beyond).
const maxBodyBytes = 1 << 20

// Page sizes accepted by list routes.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// decode reads the request body strictly into v: unknown fields, values of
// the wrong type, malformed JSON and trailing data are refused as
// invalid_argument naming the field; an empty body decodes as {}. Then the
// whole body passes input.JSON, the one check of the text it carries (valid
// UTF-8, no NUL, nothing jsonb refuses), so no handler sees such a value.
func decode(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wgerr.InvalidField("body", "trailing data after the JSON value")
	}
	if err := input.JSON(body); err != nil {
		return err
	}
	return exactKeys(reflect.TypeOf(v), body)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// exactKeys refuses a key of an object decoded into a struct that names
// one of its fields only when case is ignored ("Title" for "title"), as
// an unknown field: encoding/json matches keys without regard to case, so
// {"title": "a", "TITLE": "b"} stored "b". raw was decoded into v's type t
// already (it is valid JSON of the right shapes). One pass over the
// tokens, following the types down; types that decode themselves, maps
// and raw values are not looked into.
func exactKeys(t reflect.Type, raw []byte) error {
	type frame struct {
		fields  map[string]reflect.Type // a struct's; nil: not looked into
		elem    reflect.Type            // an array's element type; nil: not looked into
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	// path names the value being read, as input.JSON names it (built
	// only for an error: a path per value would cost the square of the
	// depth).
	path := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.object && b.Len() > 0:
				b.WriteString("." + f.key)
			case f.object:
				b.WriteString(f.key)
			default:
				if i == 0 {
					b.WriteString("body")
				}
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	done := func() {
		if len(stack) > 0 {
			if f := &stack[len(stack)-1]; f.object {
				f.wantKey = true
			} else {
				f.index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end (decoding judged the syntax)
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '}' || tok == ']' {
				stack = stack[:len(stack)-1]
				done()
				continue
			}
			// The type of the value beginning here.
			vt := t
			if n := len(stack); n > 0 {
				if f := stack[n-1]; f.object {
					vt = f.fields[f.key]
				} else {
					vt = f.elem
				}
			}
			f := frame{object: tok == '{', wantKey: tok == '{'}
			for vt != nil && vt.Kind() == reflect.Pointer {
				vt = vt.Elem()
			}
			if vt != nil && !reflect.PointerTo(vt).Implements(unmarshalerType) {
				switch {
				case f.object && vt.Kind() == reflect.Struct:
					f.fields = jsonFields(vt)
				case !f.object && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array) && vt.Elem().Kind() != reflect.Uint8:
					f.elem = vt.Elem()
				}
			}
			stack = append(stack, f)
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				f := &stack[n-1]
				f.key, f.wantKey = tok, false
				if f.fields != nil {
					if _, ok := f.fields[tok]; !ok {
						return wgerr.InvalidField(path(), "unknown field (field names are case-sensitive)")
					}
				}
				continue
			}
			done()
		default:
			done()
		}
	}
}

// fieldsOf caches jsonFields by type.
var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names of a struct's fields (those of embedded
// structs without a name of their own included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsOf.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := structFields(t)
	fieldsOf.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
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
	if req.ContentLength > maxBodyBytes {
		return nil, tooLarge()
	}
	if req.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, maxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, wgerr.InvalidField("body", "could not be read")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

func tooLarge() error {
	return wgerr.New(wgerr.CodePayloadTooLarge, "the request body exceeds %d bytes", maxBodyBytes)
}

func decodeError(err error) error {
	var (
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
			return wgerr.InvalidField(field, "must be a JSON object")
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
