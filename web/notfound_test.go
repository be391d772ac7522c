package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/lease"
)

// TestUnknownPageInProject: an address below a project that is no page
// (a typo, an old bookmark) keeps the project's navigation, with its
// counters, and leads back to the project, not to the site's root; below a
// project the person may not see, it says no more than before.
func TestUnknownPageInProject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustItem("leased")
	if _, err := e.leases.Claim(context.Background(), e.project.ID, lease.ClaimRequest{Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	for _, path := range []string{"/p/acme/nosuch", "/p/acme/items/x/y/z", "/p/acme/inbox/"} {
		r := b.get(path)
		wantStatus(t, r, http.StatusNotFound)
		wantBody(t, r, "There is no such page", `<a href="/p/acme/items">Items</a>`, `data-live="leases">1</span>`, `<a href="/p/acme">Go back</a>`)
	}
	r := b.get("/p/other/nosuch")
	wantStatus(t, r, http.StatusNotFound)
	wantBody(t, r, `<a href="/">Go back</a>`)
	if r := b.get("/p/other/nosuch"); r.StatusCode != http.StatusNotFound || strings.Contains(r.body, "/p/other/items") {
		t.Fatalf("a project that does not exist got a navigation:\n%s", r.body)
	}
}
