package web_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestBadTextIsRefused: a NUL or invalid UTF-8 in a form field, a query
// parameter or a path segment is a 400 page that names the field, and
// nothing is stored (PostgreSQL's text refuses both; they were 500s).
func TestBadTextIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	it := e.mustItem("Target")
	before := allItems(t, e)
	for _, v := range []struct{ name, val, raw string }{{"NUL", "a\x00b", "a%00b"}, {"BadUTF8", "a\xffb", "a%FFb"}} {
		t.Run("NewItemTitle"+v.name, func(t *testing.T) {
			b.get("/p/acme/items/new")
			r := b.post("/p/acme/items", url.Values{"title": {v.val}, "priority": {"0"}})
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "title")
		})
		t.Run("NewItemBody"+v.name, func(t *testing.T) {
			b.get("/p/acme/items/new")
			r := b.post("/p/acme/items", url.Values{"title": {"ok"}, "body": {v.val}, "priority": {"0"}})
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "body")
		})
		t.Run("HoldQuestion"+v.name, func(t *testing.T) {
			b.get("/p/acme/items/" + it.ID.String())
			r := b.post("/p/acme/items/"+it.ID.String()+"/hold", url.Values{"question": {v.val}})
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "question")
		})
		t.Run("ItemsQuery"+v.name, func(t *testing.T) {
			r := b.get("/p/acme/items?q=" + v.raw)
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "q:")
		})
		t.Run("LeasesWorker"+v.name, func(t *testing.T) {
			r := b.get("/p/acme/leases?worker=" + v.raw)
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "worker")
		})
		t.Run("ProjectSegment"+v.name, func(t *testing.T) {
			r := b.get("/p/" + v.raw + "/items")
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "project")
		})
	}
	if after := allItems(t, e); after != before {
		t.Fatalf("items %d -> %d: a refused form stored something", before, after)
	}
	if open, _ := e.att.ForItem(t.Context(), e.project.ID, it.ID); len(open) != 0 {
		t.Fatalf("a refused hold opened %d requests", len(open))
	}
}

func allItems(t *testing.T, e *env) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(t.Context(), "SELECT count(*) FROM items").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
