package api_test

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/api"
)

// notFuzzed are the operations of the OpenAPI document with a body or a
// query string that no fuzz target sends, and why.
var notFuzzed = map[string]string{
	"GET /v1/events/stream":                    "a stream: it answers until the client leaves, so one input never ends",
	"GET /v1/projects/{project}/events/stream": "a stream: it answers until the client leaves, so one input never ends",
}

// TestFuzzCoversEveryRoute: every request body, query string and cursor
// the API takes (by openapi.json) is sent by a fuzz target, as issue 13
// asks (no 5xx, a refusal changes nothing), unless notFuzzed says why not.
// A route added without a fuzz entry fails here.
func TestFuzzCoversEveryRoute(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
		Comps struct {
			Parameters map[string]openAPIParam `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	bodies, queries, cursors := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, group := range [][]bodyRoute{itemRoutes, leaseRoutes, attentionRoutes, adminRoutes, settingsRoutes} {
		for _, r := range group {
			bodies[r.method+" "+r.route] = true
		}
	}
	for _, p := range queryRoutes {
		queries["GET "+fuzzTemplate(p)] = true
	}
	for _, p := range cursorRoutes {
		cursors["GET "+fuzzTemplate(p)] = true
	}

	var missing []string
	for path, ops := range doc.Paths {
		var common []openAPIParam
		if raw, ok := ops["parameters"]; ok {
			json.Unmarshal(raw, &common)
		}
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				RequestBody json.RawMessage `json:"requestBody"`
				Parameters  []openAPIParam  `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			name := strings.ToUpper(method) + " " + path
			if _, ok := notFuzzed[name]; ok {
				continue
			}
			query, cursor := false, false
			for _, p := range append(common, op.Parameters...) {
				if p.Ref != "" {
					p = doc.Comps.Parameters[p.Ref[strings.LastIndex(p.Ref, "/")+1:]]
				}
				query = query || p.In == "query"
				cursor = cursor || p.In == "query" && p.Name == "cursor"
			}
			if op.RequestBody != nil && !bodies[name] {
				missing = append(missing, name+": its body (a bodyRoute)")
			}
			if query && !queries[name] {
				missing = append(missing, name+": its query string (queryRoutes)")
			}
			if cursor && !cursors[name] {
				missing = append(missing, name+": its cursor (cursorRoutes)")
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("not fuzzed:\n  %s", strings.Join(missing, "\n  "))
	}
}

type openAPIParam struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// fuzzTemplate turns a fuzzed path back into its OpenAPI template: the
// fixture's project and the resources it names become parameters.
func fuzzTemplate(p string) string {
	p = strings.Replace(p, "/v1/projects/alpha", "/v1/projects/{project}", 1)
	return fuzzResource.ReplaceAllString(p, "{id}")
}

var fuzzResource = regexp.MustCompile(`\{(dep|webhook|lease)\}`)
