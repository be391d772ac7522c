package api_test

import (
	"testing"
)

// TestIfMatchAndVersionMustAgree: a PATCH may make its edit conditional
// with an If-Match header or a body "version"; given both, they must name
// the same version. The header used to win silently, so a client whose
// body said version 2 had its edit applied on the strength of a header
// saying 1 (or the other way round): which condition held depended on
// which one the server read. Now it is 400 invalid_argument naming
// "version", and nothing changes.
func TestIfMatchAndVersionMustAgree(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{"title": "v1"})
	path := "/v1/projects/alpha/items/" + it.ID
	// Version 2: the body's version is the current one, the header's stale.
	f.do("PATCH", path, f.human.Token, map[string]any{"title": "v2"}).ok(t, 200, nil)

	for _, tc := range []struct {
		name, ifMatch string
		version       int
	}{
		{"HeaderStaleBodyCurrent", `"1"`, 2},
		{"HeaderCurrentBodyStale", `"2"`, 1},
		{"WeakHeader", `W/"1"`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.do("PATCH", path, f.human.Token, map[string]any{"title": "changed", "version": tc.version},
				withHeader("If-Match", tc.ifMatch)).problem(t, 400, "invalid_argument")
			field(t, p, "version")
			if got := f.count("SELECT version FROM items WHERE id = $1", it.ID); got != 2 {
				t.Fatalf("version %d after a refused edit, want 2", got)
			}
			if n := f.count("SELECT count(*) FROM items WHERE id = $1 AND title = 'v2'", it.ID); n != 1 {
				t.Fatal("a refused edit changed the title")
			}
		})
	}
	t.Run("Agreeing", func(t *testing.T) {
		f.do("PATCH", path, f.human.Token, map[string]any{"title": "v3", "version": 2}, withHeader("If-Match", `"2"`)).ok(t, 200, nil)
	})
	t.Run("AnyVersionHeader", func(t *testing.T) {
		// If-Match: * matches every version, so the body's decides.
		f.do("PATCH", path, f.human.Token, map[string]any{"title": "v4", "version": 1}, withHeader("If-Match", "*")).problem(t, 409, "conflict")
		f.do("PATCH", path, f.human.Token, map[string]any{"title": "v4", "version": 3}, withHeader("If-Match", "*")).ok(t, 200, nil)
	})
}
