package openapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/api/openapi"
)

const doc = `{
  "openapi": "3.1.0",
  "paths": {
    "/v1/things/{id}": {
      "get": {"operationId": "getThing", "responses": {
        "200": {"description": "a thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
        "204": {"description": "nothing"},
        "404": {"$ref": "#/components/responses/Problem"}}}
    },
    "/v1/things": {
      "post": {"operationId": "createThing",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["a", "b"]}}, "additionalProperties": false}}}},
        "responses": {"204": {"description": "made"}}}
    },
    "/v1/things/special": {
      "get": {"operationId": "getSpecial", "responses": {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["n"]}}}}}}
    }
  },
  "components": {
    "responses": {"Problem": {"description": "error", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
    "schemas": {
      "Problem": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
      "Thing": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "format": "uuid"},
          "at": {"type": ["string", "null"], "format": "date-time"},
          "kind": {"type": "string", "enum": ["a", "b"]},
          "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}, "maxItems": 2},
          "outcome": {"oneOf": [{"type": "string", "enum": ["done"]}, {"type": "null"}]},
          "any": {"description": "any JSON value"}
        },
        "required": ["id", "at", "kind"],
        "additionalProperties": false
      }
    }
  }
}`

const id = "6f1c2c5e-3f53-4d8e-9d3c-0c7d1f3b2a10"

func load(t *testing.T) *openapi.Document {
	t.Helper()
	d, err := openapi.Load([]byte(doc))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return d
}

var jsonHeader = http.Header{"Content-Type": {"application/json; charset=UTF-8"}}

func TestCheckResponse(t *testing.T) {
	t.Parallel()
	d := load(t)
	problem := http.Header{"Content-Type": {"application/problem+json"}}
	cases := []struct {
		name   string
		method string
		path   string
		status int
		header http.Header
		body   string
		err    string // "" = valid
	}{
		{"OK", "GET", "/v1/things/" + id + "?x=1", 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "tags": ["x"], "outcome": "done", "any": [1, {}]}`, ""},
		{"OKDateTime", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": "2026-12-01T10:00:00.123Z", "kind": "b", "outcome": null}`, ""},
		{"OKNoContent", "GET", "/v1/things/" + id, 204, http.Header{}, ``, ""},
		{"OKProblem", "GET", "/v1/things/" + id, 404, problem, `{"code": "not_found"}`, ""},
		{"OKLiteralSegmentWins", "GET", "/v1/things/special", 200, jsonHeader, `{"n": 2}`, ""},
		{"OKUnknownRoute", "GET", "/v1/elsewhere", 404, problem, `{"code": "not_found"}`, ""},
		{"OKOtherMethod", "PUT", "/v1/things/" + id, 405, problem, `{"code": "method_not_allowed"}`, ""},
		{"ErrRequired", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "kind": "a"}`, `required member "at"`},
		{"ErrAdditional", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "requests": []}`, `member "requests" is not documented`},
		{"ErrType", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": 7, "at": null, "kind": "a"}`, `/id: 7 is a number, want string`},
		{"ErrUUID", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "x", "at": null, "kind": "a"}`, `is not a uuid`},
		{"ErrDateTime", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": "yesterday", "kind": "a"}`, `not an RFC 3339`},
		{"ErrDateTimeOffset", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": "2026-12-01T10:00:00.123+00:00", "kind": "a"}`, `in UTC (Z)`},
		{"ErrNullable", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": "", "kind": "a"}`, `not an RFC 3339`},
		{"ErrEnum", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "c"}`, `is not one of`},
		{"ErrItems", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "tags": ["A"]}`, `/tags/0`},
		{"ErrMinLength", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "tags": [""]}`, `shorter`},
		{"ErrMaxItems", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "tags": ["a", "b", "c"]}`, `at most`},
		{"ErrOneOf", "GET", "/v1/things/" + id, 200, jsonHeader, `{"id": "` + id + `", "at": null, "kind": "a", "outcome": "lost"}`, `oneOf`},
		{"ErrInteger", "GET", "/v1/things/special", 200, jsonHeader, `{"n": 1.5}`, `want integer`},
		{"ErrMaximum", "GET", "/v1/things/special", 200, jsonHeader, `{"n": 4}`, `maximum`},
		{"ErrStatus", "GET", "/v1/things/" + id, 500, problem, `{"code": "internal"}`, `does not list`},
		{"ErrContentType", "GET", "/v1/things/" + id, 404, jsonHeader, `{"code": "not_found"}`, `Content-Type "application/json"`},
		{"ErrBodyOnNoContent", "GET", "/v1/things/" + id, 204, jsonHeader, `{}`, `with a body`},
		{"ErrNotJSON", "GET", "/v1/things/special", 200, jsonHeader, `{"n": `, `not JSON`},
		{"ErrUnknownRouteStatus", "GET", "/v1/elsewhere", 200, jsonHeader, `{}`, `want 404`},
		{"ErrOtherMethodStatus", "DELETE", "/v1/things/" + id, 404, problem, `{"code": "not_found"}`, `want 405`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := d.CheckResponse(c.method, c.path, c.status, c.header, []byte(c.body))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("valid answer refused: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("invalid answer accepted, want an error naming %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("error %q does not name %q", err, c.err)
			}
		})
	}
}

func TestLoadRefusesUnknownKeyword(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(doc, `"maxItems": 2`, `"uniqueItems": true`, 1)
	_, err := openapi.Load([]byte(bad))
	if err == nil || !strings.Contains(err.Error(), "uniqueItems") {
		t.Fatalf("Load of a schema with uniqueItems: %v, want an error naming it", err)
	}
}

func TestOperations(t *testing.T) {
	t.Parallel()
	ops := load(t).Operations()
	if len(ops) != 3 || ops[0].ID != "createThing" || ops[1].ID != "getSpecial" || ops[2].ID != "getThing" {
		t.Fatalf("operations %+v", ops)
	}
	r, ok := ops[2].Response(404)
	if _, hasProblem := r.Content["application/problem+json"]; !ok || !hasProblem {
		t.Fatalf("404 of getThing: %+v (the $ref to components/responses is resolved)", r)
	}
}

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	d := load(t)
	cases := []struct {
		name, method, path, body, err string
	}{
		{"OK", "POST", "/v1/things", `{"kind": "a"}`, ""},
		{"OKEmpty", "POST", "/v1/things", ``, ""},
		{"OKNoBody", "GET", "/v1/things/" + id, ``, ""},
		{"ErrMember", "POST", "/v1/things", `{"colour": "red"}`, `member "colour" is not documented`},
		{"ErrEnum", "POST", "/v1/things", `{"kind": "c"}`, `is not one of`},
		{"ErrBodyWhereNone", "GET", "/v1/things/" + id, `{}`, `has a body`},
		{"ErrUnknownRoute", "POST", "/v1/elsewhere", `{}`, `not a documented operation`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := d.CheckRequest(c.method, c.path, jsonHeader, []byte(c.body))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("valid request refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one naming %q", err, c.err)
			}
		})
	}
}
