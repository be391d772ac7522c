package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// setItemID gives an item a chosen id, so that two items can share the
// first characters of theirs.
func (e *env) setItemID(it graph.Item, id string) graph.Item {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE items SET id = $1 WHERE id = $2`, id, it.ID); err != nil {
		e.t.Fatalf("set the id of %q: %v", it.Title, err)
	}
	it.ID = uuid.MustParse(id)
	return it
}

// TestItemPageTakesShortID: the address of an item's pages takes the first
// characters of its id, as the board, the list and the CLI's tables show
// them (a person types /p/acme/items/e8e0a4e8): one item has them, and the
// page is its, under its whole id; several do, and the page lists them; none
// does, and the page says so.
func TestItemPageTakesShortID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	one := e.setItemID(e.mustItem("Write the migration"), "5eed0001-0000-4000-8000-000000000001")
	a := e.setItemID(e.mustItem("Add the endpoint"), "abcd1234-0000-4000-8000-000000000001")
	b := e.setItemID(e.mustItem("Add the page"), "abcd1234-9999-4000-8000-000000000002")
	bw := e.signIn(e.human)

	for path, want := range map[string]string{
		"/p/acme/items/5eed0001":              "/p/acme/items/" + one.ID.String(),
		"/p/acme/items/5EED0001":              "/p/acme/items/" + one.ID.String(),
		"/p/acme/items/5eed0001-0000/graph":   "/p/acme/items/" + one.ID.String() + "/graph",
		"/p/acme/items/5eed/edit":             "/p/acme/items/" + one.ID.String() + "/edit",
		"/p/acme/items/5eed0001?leases=x#top": "/p/acme/items/" + one.ID.String() + "?leases=x",
		"/p/acme/items/abcd1234-0000":         "/p/acme/items/" + a.ID.String(),
	} {
		r := bw.get(path)
		wantStatus(t, r, http.StatusFound)
		if got := r.Header.Get("Location"); got != want {
			t.Errorf("GET %s: Location %q, want %q", path, got, want)
		}
	}

	r := bw.get("/p/acme/items/abcd1234")
	wantStatus(t, r, http.StatusNotFound)
	wantBody(t, r, "2 items", "abcd1234",
		`<a href="/p/acme/items/`+a.ID.String()+`">`, "Add the endpoint",
		`<a href="/p/acme/items/`+b.ID.String()+`">`, "Add the page",
		`<a href="/p/acme">Go back</a>`)

	r = bw.get("/p/acme/items/ffff0000")
	wantStatus(t, r, http.StatusNotFound)
	wantBody(t, r, `no item id starts with &#34;ffff0000&#34;`, `<a href="/p/acme">Go back</a>`)

	// Too short, or not an id at all: not found, as before.
	wantStatus(t, bw.get("/p/acme/items/abc"), http.StatusNotFound)
	wantStatus(t, bw.get("/p/acme/items/not-an-id"), http.StatusNotFound)
}

// TestItemsFilterTakesShortIDs: the items page's filters take the short
// ids the board shows: the parent filter an id's first characters (it
// refused anything but a whole id), and a search for them finds the item
// whose id starts with them besides the items whose text has them.
func TestItemsFilterTakesShortIDs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	parent := e.setItemID(e.mustItem("Build the site"), "5eed0001-0000-4000-8000-000000000001")
	if _, err := e.graph.CreateItem(context.Background(), e.project.ID, graph.NewItem{Title: "Write the page", ParentID: &parent.ID, CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	other := e.setItemID(e.mustItem("Unrelated"), "abcd1234-0000-4000-8000-000000000001")
	bw := e.signIn(e.human)

	r := bw.get("/p/acme/items?parent=5eed0001")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `Children of <a href="/p/acme/items/`+parent.ID.String()+`">Build the site</a>`, "Write the page")

	r = bw.get("/p/acme/items?view=list&q=5eed0001")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `href="/p/acme/items/`+parent.ID.String()+`"`)
	if strings.Contains(r.body, other.ID.String()) {
		t.Errorf("a search for one id's start lists another item")
	}
	r = bw.get("/p/acme/items?q=5eed0001")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `href="/p/acme/items/`+parent.ID.String()+`"`)

	r = bw.get("/p/acme/items?parent=ffff0000")
	wantStatus(t, r, http.StatusNotFound)
	wantBody(t, r, `no item id starts with &#34;ffff0000&#34;`)
}

// TestNewItemFormTakesShortIDs: the new-item form's parent and depends-on
// fields take the first characters of an id, as the board and the CLI's
// tables show them (the form refused anything but a whole id), and say
// what is wrong with one that no item, or several, start with; a refused
// form creates nothing.
func TestNewItemFormTakesShortIDs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	parent := e.setItemID(e.mustItem("Build the site"), "5eed0001-0000-4000-8000-000000000001")
	dep := e.setItemID(e.mustItem("Design the site"), "de5e0001-0000-4000-8000-000000000001")
	e.setItemID(e.mustItem("Add the endpoint"), "abcd1234-0000-4000-8000-000000000001")
	e.setItemID(e.mustItem("Add the page"), "abcd1234-9999-4000-8000-000000000002")
	bw := e.signIn(e.human)

	r := bw.post("/p/acme/items", url.Values{"title": {"Write the page"}, "parent": {"5eed0001"}, "depends_on": {"DE5E0001, " + dep.ID.String()[:13]}})
	wantStatus(t, r, http.StatusSeeOther)
	created, err := uuid.Parse(strings.TrimPrefix(r.Header.Get("Location"), "/p/acme/items/"))
	if err != nil {
		t.Fatalf("created item's address %q: %v", r.Header.Get("Location"), err)
	}
	it, err := e.graph.Item(context.Background(), e.project.ID, created)
	if err != nil {
		t.Fatal(err)
	}
	if it.ParentID == nil || *it.ParentID != parent.ID {
		t.Errorf("parent = %v, want %s", it.ParentID, parent.ID)
	}
	nb, err := e.graph.Neighbourhood(context.Background(), e.project.ID, created)
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Dependencies) != 1 || nb.Dependencies[0].ID != dep.ID {
		t.Errorf("dependencies = %+v, want %s only", nb.Dependencies, dep.ID)
	}

	count := func() int {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM items`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, c := range []struct {
		field, value, want string
	}{
		{"parent", "abcd1234", "Parent: 2 items start with &#34;abcd1234&#34;; type more of the id"},
		{"parent", "ffff0000", "Parent: no item id starts with &#34;ffff0000&#34;"},
		{"depends_on", "de5e0001, ffff0000", "Depends on: no item id starts with &#34;ffff0000&#34;"},
		{"depends_on", "zzzz", "Depends on: &#34;zzzz&#34; is not an item id: type its id, or at least its first 4 characters"},
	} {
		r := bw.post("/p/acme/items", url.Values{"title": {"Refused"}, c.field: {c.value}})
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, c.want)
	}
	if n := count(); n != before {
		t.Errorf("refused forms created %d items", n-before)
	}
}

// TestHistoryFilterTakesShortIDs: the history's item filter (and its CSV
// export's) takes the first characters of an item's id, as the table
// shows them; it refused anything but a whole id.
func TestHistoryFilterTakesShortIDs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.setItemID(e.mustItem("Leased once"), "5eed0001-0000-4000-8000-000000000001")
	e.setItemID(e.mustItem("Leased once too"), "abcd1234-0000-4000-8000-000000000001")
	c, err := e.leases.Claim(context.Background(), e.project.ID, lease.ClaimRequest{Worker: "w-short"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	leased := c.Item.ID // either item; the other has no lease
	other := it
	if leased == it.ID {
		other = e.setItemID(e.mustItem("Never leased either"), "abcd5678-0000-4000-8000-000000000001")
	}
	bw := e.signIn(e.human)

	r := bw.get("/p/acme/leases?item=" + leased.String()[:8])
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "w-short")
	// The filter is the item's: another item's page of history is empty.
	r = bw.get("/p/acme/leases?item=" + other.ID.String()[:8])
	wantStatus(t, r, http.StatusOK)
	if strings.Contains(r.body, "w-short") {
		t.Errorf("the history of %s lists the lease of %s", other.ID, leased)
	}
	r = bw.get("/p/acme/leases.csv?item=" + leased.String()[:8])
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, c.Lease.ID.String())

	r = bw.get("/p/acme/leases?item=ffff0000")
	wantStatus(t, r, http.StatusNotFound)
	wantBody(t, r, "no item id starts with &#34;ffff0000&#34;")
	r = bw.get("/p/acme/leases?item=zz")
	wantStatus(t, r, http.StatusBadRequest)
	wantBody(t, r, "&#34;zz&#34; is not an item id")
}
