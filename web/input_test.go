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
	if open, _ := e.att.ForItem(t.Context(), e.project.ID, it.ID, "", 0); len(open.Requests) != 0 {
		t.Fatalf("a refused hold opened %d requests", len(open.Requests))
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

// TestInvisibleTextIsRefused: the forms refuse what the API refuses in
// text people read (input.Line, input.Prose): a title with a tab or a
// U+202E RIGHT-TO-LEFT OVERRIDE, a description or a hold's question with
// a terminal escape or an override; a 400 page naming the field, nothing
// stored. A description keeps its tabs and line breaks.
func TestInvisibleTextIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	it := e.mustItem("Target")
	before := allItems(t, e)
	for _, tc := range []struct{ name, path, field string }{
		{"TitleTab", "/p/acme/items", "title"},
		{"TitleOverride", "/p/acme/items", "title"},
		{"BodyEscape", "/p/acme/items", "body"},
		{"HoldOverride", "/p/acme/items/" + it.ID.String() + "/hold", "question"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"title": {"ok"}, "priority": {"0"}}
			switch tc.name {
			case "TitleTab":
				form.Set("title", "a\tb")
			case "TitleOverride":
				form.Set("title", "invoice\u202efdp.exe")
			case "BodyEscape":
				form.Set("body", "x\x1b[2Jy")
			case "HoldOverride":
				form = url.Values{"question": {"why\u202e?"}}
			}
			b.get("/p/acme/items/new")
			r := b.post(tc.path, form)
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, tc.field)
		})
	}
	if after := allItems(t, e); after != before {
		t.Fatalf("items %d -> %d: a refused form stored something", before, after)
	}
	if open, _ := e.att.ForItem(t.Context(), e.project.ID, it.ID, "", 0); len(open.Requests) != 0 {
		t.Fatalf("a refused hold opened %d requests", len(open.Requests))
	}
	b.get("/p/acme/items/new")
	wantStatus(t, b.post("/p/acme/items", url.Values{"title": {"café 👨\u200d👩\u200d👧"}, "priority": {"0"}, "body": {"line 1\n\tindented"}}), http.StatusSeeOther)
}
