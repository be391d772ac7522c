package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
)

// TestSearchGate: with every search slot of one project held, that
// project's next search waits briefly and is refused with 429 and
// Retry-After, while another project's search, and the first project's
// lists without a text filter, still answer.
func TestSearchGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, srv, graphSvc, authSvc := gatedAPI(t, func(c *Config) { c.SearchConcurrency, c.SearchWait = 2, 50*time.Millisecond })

	busy, err := graphSvc.CreateProject(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graphSvc.CreateProject(ctx, "calm"); err != nil {
		t.Fatal(err)
	}
	_, admin, err := authSvc.Create(ctx, nil, "admin", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	var releases []func()
	for range 2 {
		release, err := a.searches.enter(ctx, busy.ID)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	res := get("/v1/projects/busy/items?q=report")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a search beyond the bound: status %d, Retry-After %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := get("/v1/projects/calm/items?q=report"); res.StatusCode != http.StatusOK {
		t.Fatalf("another project's search while the first is at its bound: status %d, want 200", res.StatusCode)
	}
	if res := get("/v1/projects/busy/items"); res.StatusCode != http.StatusOK {
		t.Fatalf("a list without a text filter: status %d, want 200", res.StatusCode)
	}
	releases[0]()
	if res := get("/v1/projects/busy/items?q=report"); res.StatusCode != http.StatusOK {
		t.Fatalf("a search once a slot is free: status %d, want 200", res.StatusCode)
	}
	releases[1]()
	a.searches.mu.Lock()
	left := len(a.searches.slots)
	a.searches.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d projects keep gate entries with no search running", left)
	}
}
