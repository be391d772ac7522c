package web_test

import (
	"context"
	"net/http"
	"net/url"
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
		"held by worker <b>coder-1</b>", c.Lease.ID.String())
	if u := r.body[strings.Index(r.body, `id="unoffered"`):]; strings.Contains(u[:strings.Index(u, "</div>")], "<b>go</b>") {
		t.Fatalf("the page says no worker offered go; coder-1 did:\n%s", u[:200])
	}

	r = b.get("/p/acme/workers")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Write scopes", `<code class="scope">repo:web/**</code>`)
}

// TestItemFormFleet: a person sets an item's required capabilities and
// write scopes in the new item form and changes them in the edit form
// (which shows them); a bad scope is refused with a message and changes
// nothing; an edit posted without the two fields leaves them as they are.
func TestItemFormFleet(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	b := e.signIn(e.human)

	r := b.get("/p/acme/items/new")
	wantBody(t, r, `name="requires"`, `name="touches"`)
	r = b.post("/p/acme/items", url.Values{"title": {"Train"}, "priority": {"0"}, "labels": {""},
		"requires": {"gpu, python"}, "touches": {"repo:ml/**"}})
	wantStatus(t, r, http.StatusSeeOther)
	page, err := e.graph.ListItems(ctx, e.project.ID, graph.ListFilter{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("items: %v %v", page.Items, err)
	}
	it := page.Items[0]
	if strings.Join(it.Requires, ",") != "gpu,python" || strings.Join(it.Touches, ",") != "repo:ml/**" {
		t.Fatalf("created with requires %q, touches %q", it.Requires, it.Touches)
	}

	edit := "/p/acme/items/" + it.ID.String() + "/edit"
	r = b.get(edit)
	wantBody(t, r, `value="gpu, python"`, `value="repo:ml/**"`)
	wantStatus(t, b.post(edit, url.Values{"title": {"Train"}, "priority": {"0"}, "labels": {""}, "version": {"1"},
		"requires": {"gpu"}, "touches": {""}}), http.StatusSeeOther)
	got, _ := e.graph.Item(ctx, e.project.ID, it.ID)
	if strings.Join(got.Requires, ",") != "gpu" || len(got.Touches) != 0 {
		t.Fatalf("edited to requires %q, touches %q", got.Requires, got.Touches)
	}

	r = b.post(edit, url.Values{"title": {"Train"}, "priority": {"0"}, "labels": {""}, "version": {"2"},
		"requires": {"gpu"}, "touches": {"repo:ml/" + strings.Repeat("x", 600)}})
	wantStatus(t, r, http.StatusBadRequest)
	wantBody(t, r, "touches")
	if again, _ := e.graph.Item(ctx, e.project.ID, it.ID); again.Version != got.Version {
		t.Fatalf("a refused edit changed the item (version %d -> %d)", got.Version, again.Version)
	}

	wantStatus(t, b.post(edit, url.Values{"title": {"Train on GPUs"}, "priority": {"0"}, "labels": {""}, "version": {"2"}}), http.StatusSeeOther)
	got, _ = e.graph.Item(ctx, e.project.ID, it.ID)
	if got.Title != "Train on GPUs" || strings.Join(got.Requires, ",") != "gpu" {
		t.Fatalf("an edit without the fleet fields: title %q, requires %q", got.Title, got.Requires)
	}
}
