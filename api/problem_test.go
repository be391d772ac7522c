package api_test

import (
	"strings"
	"testing"
)

func TestEchoErrorsAreProblems(t *testing.T) {
	t.Parallel()
	e := setup(t)
	t.Run("NoRoute", func(t *testing.T) {
		e.do("GET", "/v1/nothing-here", adminToken, nil).problem(t, 404, "not_found")
		e.do("GET", "/v1/nothing-here", "", nil).problem(t, 404, "not_found")
	})
	t.Run("MethodNotAllowed", func(t *testing.T) {
		r := e.do("PUT", "/v1/projects", adminToken, "{}")
		r.problem(t, 405, "method_not_allowed")
		if allow := r.header.Get("Allow"); allow != "GET, POST" {
			t.Fatalf("Allow %q, want \"GET, POST\"", allow)
		}
		e.do("DELETE", "/v1/projects/alpha/items/00000000-0000-0000-0000-000000000001", adminToken, nil).problem(t, 405, "method_not_allowed")
		e.do("GET", "/v1/projects/alpha/items/x/nothing", adminToken, nil).problem(t, 404, "not_found")
	})
	t.Run("PayloadTooLarge", func(t *testing.T) {
		big := `{"name": "` + strings.Repeat("a", 2<<20) + `"}`
		e.do("POST", "/v1/projects", adminToken, big).problem(t, 413, "payload_too_large")
		// Chunked, without a Content-Length.
		e.do("POST", "/v1/projects", adminToken, strings.NewReader(big)).problem(t, 413, "payload_too_large")
	})
	t.Run("Malformed", func(t *testing.T) {
		for _, body := range []string{`{"name":`, `{"name": "a"} {"name": "b"}`, `[1]`, `"x"`, `{"name": "a"}x`} {
			p := e.do("POST", "/v1/projects", adminToken, body).problem(t, 400, "invalid_argument")
			if p["field"] == nil {
				t.Fatalf("%s: problem names no field: %v", body, p)
			}
		}
		if n := e.count("SELECT count(*) FROM projects"); n != 0 {
			t.Fatal("a refused project was stored")
		}
	})
	t.Run("HealthzOutsideAPI", func(t *testing.T) {
		e.do("GET", "/healthz", "", nil).ok(t, 200, nil)
	})
}
