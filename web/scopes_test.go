package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestFleetPages: the item page shows an item's requires and touches, the
// required capability no worker offered, and the lease that holds an
// overlapping scope; the workers page shows the scopes each lease holds.
func TestFleetPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	held, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "rewrite web", Priority: 5,
		Touches: []string{"repo:web/**"}, Requires: []string{"go"}, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "fix a page",
		Touches: []string{"repo:web/src/page.go"}, Requires: []string{"go", "gpu"}, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "coder-1", Capabilities: []string{"go"}})
	if err != nil || c.Item.ID != held.ID {
		t.Fatalf("claim: %v (%s)", err, c.Item.Title)
	}
	b := e.signIn(e.human)

	r := b.get("/p/acme/items/" + waiting.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "requires", ">gpu<", "repo:web/src/page.go", `id="unoffered"`, "<b>gpu</b>",
		"held by worker <b>coder-1</b>", c.Lease.ID.String()[:8])
	if u := r.body[strings.Index(r.body, `id="unoffered"`):]; strings.Contains(u[:strings.Index(u, "</div>")], "<b>go</b>") {
		t.Fatalf("the page says no worker offered go; coder-1 did:\n%s", u[:200])
	}

	r = b.get("/p/acme/workers")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Write scopes", `<code class="scope">repo:web/**</code>`)
}
