package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/api"
	"github.com/workgraph-dev/workgraph/api/openapi"
)

// TestOpenAPIMatchesRoutes fails when the routes registered in Echo and the
// paths and methods of the OpenAPI document drift apart.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	e := echo.New()
	api.New(api.Config{}).Mount(e)

	param := regexp.MustCompile(`:([a-z_]+)`)
	var registered []string
	for _, r := range e.Routes() {
		if !strings.HasPrefix(r.Path, "/v1/") || r.Method == echo.RouteNotFound {
			continue
		}
		registered = append(registered, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}

	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	ids := map[string]bool{}
	pathParam := regexp.MustCompile(`\{([a-z_]+)\}`)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: missing or duplicate operationId %q", method, path, op.OperationID)
			}
			ids[op.OperationID] = true
			if len(op.Responses) == 0 {
				t.Errorf("%s %s: no responses", method, path)
			}
			var declared []string
			for _, p := range op.Parameters {
				if p.In == "path" {
					declared = append(declared, p.Name)
				}
			}
			for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
				if !slices.Contains(declared, m[1]) {
					t.Errorf("%s %s: path parameter %q not declared", method, path, m[1])
				}
			}
		}
	}
	sort.Strings(registered)
	sort.Strings(documented)
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(registered, d) {
			t.Errorf("openapi.json documents %s, which the server does not serve", d)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do(http.MethodGet, "/v1/openapi.json", "", nil)
	var doc map[string]any
	r.ok(t, 200, &doc)
	if string(r.body) != string(api.OpenAPIDocument()) {
		t.Fatal("served document differs from the embedded one")
	}
}

// TestOpenAPIServedRefusesBadQuery: the public document's one 4XX (the
// document declares 400) is a query parameter that cannot be stored, as on
// every route.
func TestOpenAPIServedRefusesBadQuery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do(http.MethodGet, "/v1/openapi.json?x=%00", "", nil)
	field(t, r.problem(t, http.StatusBadRequest, "invalid_argument"), "x")
}

// TestOpenAPIRefsResolve fails on a $ref to a component that does not exist.
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				node := any(doc)
				for _, part := range strings.Split(strings.TrimPrefix(r, "#/"), "/") {
					m, _ := node.(map[string]any)
					node = m[part]
				}
				if node == nil {
					t.Errorf("dangling $ref %s", r)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
}

// TestOpenAPIResponsesHaveSchemas fails when a documented response has no
// schema to check an answer against (only 204 and 304 carry no body), or
// when a schema uses a keyword the validator does not implement.
func TestOpenAPIResponsesHaveSchemas(t *testing.T) {
	t.Parallel()
	d, err := openapi.Load(api.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Operations()) == 0 {
		t.Fatal("no operations")
	}
	for _, op := range d.Operations() {
		if len(op.Responses) == 0 {
			t.Errorf("%s %s: no responses", op.Method, op.Path)
		}
		for status, r := range op.Responses {
			if status == "204" || status == "304" {
				if len(r.Content) != 0 {
					t.Errorf("%s %s %s: a body on a status that has none", op.Method, op.Path, status)
				}
				continue
			}
			if len(r.Content) == 0 {
				t.Errorf("%s %s %s: no content", op.Method, op.Path, status)
			}
			for mt, schema := range r.Content {
				if schema == nil {
					t.Errorf("%s %s %s %s: no schema", op.Method, op.Path, status, mt)
				}
			}
		}
	}
}

// TestOpenAPIListsCommonStatuses: every operation lists the statuses any
// request to it can be answered: 400 (a bad path or query), and for an
// authenticated one 401, 429, 500 and 503; 413 and 415 (a body declared as
// something other than JSON) when it takes a body; 409
// on every write (an Idempotency-Key reused or in progress), each of
// which declares the Idempotency-Key header it honours.
func TestOpenAPIListsCommonStatuses(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Security    *[]any         `json:"security"`
				RequestBody any            `json:"requestBody"`
				Responses   map[string]any `json:"responses"`
				Parameters  []struct {
					Ref string `json:"$ref"`
				} `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			want := []string{"400"}
			if op.Security == nil || len(*op.Security) > 0 {
				want = append(want, "401", "429", "500", "503")
			}
			if op.RequestBody != nil {
				want = append(want, "413", "415")
			}
			write := method != "get"
			if write {
				want = append(want, "409")
			}
			keyed := slices.ContainsFunc(op.Parameters, func(p struct {
				Ref string `json:"$ref"`
			}) bool {
				return p.Ref == "#/components/parameters/IdempotencyKey"
			})
			if keyed != write {
				t.Errorf("%s %s: declares the Idempotency-Key header %v, want %v (every write, no read)", strings.ToUpper(method), path, keyed, write)
			}
			for _, s := range want {
				if _, ok := op.Responses[s]; !ok {
					t.Errorf("%s %s does not list %s", strings.ToUpper(method), path, s)
				}
			}
		}
	}
}
