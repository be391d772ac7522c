package api_test

import (
	"strings"
	"testing"
)

// TestRepeatedQueryParameter: a parameter that takes one value, given more
// than once, is refused with 400 naming it; it used to be read as its first
// value and the others ignored (?limit=1&limit=500 listed one item), so a
// proxy or a log that reads the last value saw another request than the
// server ran. The parameters that take several values (state, kind, types)
// may still repeat.
func TestRepeatedQueryParameter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("p")
	items := "/v1/projects/p/items?"
	for name, tc := range map[string]struct{ path, field string }{
		"Limit":      {items + "limit=1&limit=500", "limit"},
		"Q":          {items + "q=abc&q=def", "q"},
		"Sort":       {items + "sort=priority&sort=-created", "sort"},
		"Label":      {items + "label=a&label=b", "label"},
		"Worker":     {"/v1/projects/p/leases?worker=a&worker=b", "worker"},
		"After":      {"/v1/projects/p/events?after=1&after=2", "after"},
		"GraphLimit": {"/v1/projects/p/graph?limit=5&limit=6", "limit"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := e.do("GET", tc.path, adminToken, nil).problem(t, 400, "invalid_argument")
			if p["field"] != tc.field || !strings.Contains(p["detail"].(string), "once") {
				t.Fatalf("field %v, detail %v; want %q given once", p["field"], p["detail"], tc.field)
			}
		})
	}
	t.Run("SeveralValues", func(t *testing.T) {
		t.Parallel()
		e.do("GET", items+"state=ready&state=done", adminToken, nil).ok(t, 200, nil)
		e.do("GET", "/v1/projects/p/ids?prefix=abcd&kind=item&kind=lease", adminToken, nil).ok(t, 200, nil)
		e.do("GET", "/v1/projects/p/events?types=item.created&types=item.updated", adminToken, nil).ok(t, 200, nil)
	})
}
