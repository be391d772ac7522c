package acceptance

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.get("", "/healthz").expect(t, http.StatusOK)
	e.get("", "/readyz").expect(t, http.StatusOK)
}

var param = regexp.MustCompile(`\{[^}]*\}`)

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.get("", "/v1/openapi.json")
	doc := r.expect(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "application/vnd.oai.openapi+json") {
		t.Errorf("Content-Type %q", ct)
	}
	if v := str(t, doc, "openapi"); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi %q, want 3.1.x", v)
	}
	info := sub(t, doc, "info")
	str(t, info, "title")
	str(t, info, "version")
	paths := sub(t, doc, "paths")
	norm := map[string]obj{}
	for p, v := range paths {
		norm[param.ReplaceAllString(p, "{}")] = v.(obj)
	}
	routes := []struct{ method, path string }{
		{"post", "/v1/projects"},
		{"post", "/v1/projects/{}/tokens"},
		{"delete", "/v1/projects/{}/tokens/{}"},
		{"post", "/v1/projects/{}/items"},
		{"get", "/v1/projects/{}/items"},
		{"get", "/v1/projects/{}/items/{}"},
		{"patch", "/v1/projects/{}/items/{}"},
		{"post", "/v1/projects/{}/items/{}/dependencies"},
		{"delete", "/v1/projects/{}/items/{}/dependencies/{}"},
		{"post", "/v1/projects/{}/items/{}/cancel"},
		{"get", "/v1/projects/{}/items/{}/leases"},
		{"post", "/v1/projects/{}/claims"},
		{"post", "/v1/leases/{}/heartbeat"},
		{"post", "/v1/leases/{}/complete"},
		{"post", "/v1/leases/{}/release"},
		{"post", "/v1/leases/{}/fail"},
		{"post", "/v1/leases/{}/decompose"},
		{"post", "/v1/leases/{}/attention"},
		{"get", "/v1/projects/{}/attention"},
		{"post", "/v1/attention/{}/resolve"},
		{"get", "/v1/projects/{}/leases"},
	}
	for _, rt := range routes {
		ops, ok := norm[rt.path]
		if !ok {
			t.Errorf("path %s missing", rt.path)
			continue
		}
		op, ok := ops[rt.method].(obj)
		if !ok {
			t.Errorf("%s %s missing", rt.method, rt.path)
			continue
		}
		if _, ok := op["responses"].(obj); !ok {
			t.Errorf("%s %s has no responses", rt.method, rt.path)
		}
	}
	// Query parameters of the listing routes are documented.
	for path, names := range map[string][]string{
		"/v1/projects/{}/items":  {"state", "label", "parent_id", "cursor"},
		"/v1/projects/{}/leases": {"item_id", "worker", "outcome", "since", "until", "cursor"},
	} {
		get, _ := norm[path]["get"].(obj)
		for _, n := range names {
			if !mentions(get["parameters"], n) && !mentions(doc["components"], n) {
				t.Errorf("GET %s: parameter %s not documented", path, n)
			}
		}
	}
	// Every $ref resolves inside the document.
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case obj:
			for k, e := range x {
				if k == "$ref" {
					if s, ok := e.(string); ok {
						refs = append(refs, s)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	for _, ref := range refs {
		if !strings.HasPrefix(ref, "#/") {
			t.Errorf("external $ref %s", ref)
			continue
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			m, ok := cur.(obj)
			if !ok {
				cur = nil
				break
			}
			cur = m[part]
		}
		if cur == nil {
			t.Errorf("$ref %s does not resolve", ref)
		}
	}
}
