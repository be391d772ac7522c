package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/api"
)

// TestBodyMediaType: a body declared as something other than JSON is
// refused with 415 unsupported_media_type, whose detail names the header
// to send, before anything is read or stored; JSON with parameters,
// application/<name>+json and a body without a Content-Type are read as
// JSON. Any Content-Type used to be read as JSON.
func TestBodyMediaType(t *testing.T) {
	t.Parallel()
	e := setup(t)
	contentType := func(v string) reqOpt {
		return func(r *http.Request) {
			if v == "" {
				r.Header.Del("Content-Type")
			} else {
				r.Header.Set("Content-Type", v)
			}
		}
	}
	t.Run("ErrNotJSON", func(t *testing.T) {
		t.Parallel()
		for _, ct := range []string{
			"text/plain", "text/plain; charset=utf-8", "multipart/form-data; boundary=x",
			"application/x-www-form-urlencoded", "application/xml", "text/json", "application/jsonx",
			"application/+json", "json", "application/json;;", "*/*",
		} {
			name := "ct-" + strings.NewReplacer("/", "-", ";", "-", " ", "", "=", "-", "*", "any", "+", "plus").Replace(ct)
			p := e.do("POST", "/v1/projects", adminToken, `{"name": "`+name+`"}`, contentType(ct)).problem(t, 415, "unsupported_media_type")
			if d, _ := p["detail"].(string); !strings.Contains(d, "Content-Type: application/json") {
				t.Errorf("%s: detail %q does not say which Content-Type to send", ct, d)
			}
			// Chunked, without a Content-Length.
			e.do("POST", "/v1/projects", adminToken, strings.NewReader(`{"name": "`+name+`"}`), contentType(ct)).problem(t, 415, "unsupported_media_type")
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name LIKE 'ct-%'"); n != 0 {
			t.Fatalf("%d projects stored from bodies not declared as JSON", n)
		}
	})
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		for name, ct := range map[string]string{
			"ok-plain":   "application/json",
			"ok-charset": "application/json; charset=utf-8",
			"ok-case":    "Application/JSON",
		} {
			e.do("POST", "/v1/projects", adminToken, `{"name": "`+name+`"}`, contentType(ct)).ok(t, 201, nil)
		}
		// Beyond the document's application/json (its description allows
		// them), so sent around e.do's check of accepted requests.
		for name, ct := range map[string]string{"ok-suffix": "application/merge-patch+json", "ok-none": ""} {
			req, err := http.NewRequest("POST", e.url+"/v1/projects", strings.NewReader(`{"name": "`+name+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+adminToken)
			contentType(ct)(req)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 201 {
				t.Errorf("Content-Type %q: status %d, want 201", ct, res.StatusCode)
			}
		}
		// A body-less write with a stray Content-Type has no body to refuse.
		e.do("PATCH", "/v1/projects/ok-plain", adminToken, nil, contentType("text/plain")).problem(t, 400, "invalid_argument")
	})
	t.Run("EveryBodyRoute", func(t *testing.T) {
		t.Parallel()
		var doc struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
			t.Fatal(err)
		}
		fill := strings.NewReplacer("{project}", "alpha", "{id}", "00000000-0000-0000-0000-000000000001")
		seen := 0
		for path, ops := range doc.Paths {
			for method, raw := range ops {
				var op struct {
					RequestBody any `json:"requestBody"`
				}
				if method == "parameters" || json.Unmarshal(raw, &op) != nil || op.RequestBody == nil {
					continue
				}
				seen++
				e.do(strings.ToUpper(method), fill.Replace(path), adminToken, `{}`, contentType("text/plain")).problem(t, 415, "unsupported_media_type")
			}
		}
		if seen < 20 {
			t.Fatalf("only %d operations take a body: the walk broke", seen)
		}
	})
}
