package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/page"
)

// TestPageByteBudget: rows large enough that a page of them crosses the
// byte budget (page.MaxBytes) end the page early with a next cursor, and
// walking the cursors returns every row exactly once, whatever the list
// and its order. A page of 500 rows of 2 MiB each used to be answered
// whole: a gigabyte in one answer.
func TestPageByteBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("alpha")
	agent := e.mustToken("alpha", "bot", "agent")
	const n, big = 7, 900 << 10 // 7 rows of 900 KiB: about 6 MiB, 2 pages
	fill := func(i int) string { return strings.Repeat(string(rune('a'+i)), big) }
	want := map[string]bool{}
	for i := range n {
		var it struct{ ID string }
		e.do("POST", "/v1/projects/alpha/items", adminToken, map[string]any{
			"title": fmt.Sprintf("big %d", i), "body": fill(i), "priority": i % 3,
		}).ok(t, 201, &it)
		want[it.ID] = true
	}
	// Each item is claimed, asked about (non-blocking, with a large
	// context) and completed with a large result.
	for i := range n {
		var claim struct {
			Lease struct {
				ID    string
				Epoch int64
			}
		}
		e.do("POST", "/v1/projects/alpha/claims", agent.Token, map[string]any{"worker": "w"}).ok(t, 201, &claim)
		path := "/v1/leases/" + claim.Lease.ID
		e.do("POST", path+"/attention", agent.Token, map[string]any{
			"epoch": claim.Lease.Epoch, "question": "which?", "blocking": false, "context": map[string]string{"x": fill(i)},
		}).ok(t, 201, nil)
		e.do("POST", path+"/complete", agent.Token, map[string]any{"epoch": claim.Lease.Epoch, "result": map[string]string{"x": fill(i)}}).ok(t, 200, nil)
	}

	// walk reads every page of a list and returns the ids of its rows,
	// checking each page against the budget.
	walk := func(t *testing.T, path, member, sort string) []string {
		t.Helper()
		var ids []string
		cursor, pages := "", 0
		for {
			q := url.Values{"limit": {"500"}}
			if sort != "" {
				q.Set("sort", sort)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var got map[string]json.RawMessage
			e.do("GET", path+"?"+q.Encode(), adminToken, nil).ok(t, 200, &got)
			var rows []struct{ ID string }
			if err := json.Unmarshal(got[member], &rows); err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 && cursor != "" {
				t.Fatalf("page %d of %s is empty", pages, path)
			}
			if len(rows) > 1 && len(got[member]) > page.MaxBytes+len(rows)*(page.RowOverhead+big/2) {
				t.Fatalf("page %d of %s: %d rows in %d bytes, over the budget of %d", pages, path, len(rows), len(got[member]), page.MaxBytes)
			}
			for _, r := range rows {
				ids = append(ids, r.ID)
			}
			pages++
			var next *string
			if err := json.Unmarshal(got["next_cursor"], &next); err != nil || next == nil {
				break
			}
			cursor = *next
		}
		if pages < 2 {
			t.Fatalf("%s: %d rows of %d bytes in one page", path, len(ids), big)
		}
		return ids
	}
	once := func(t *testing.T, ids []string, want int) {
		t.Helper()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("row %s returned twice", id)
			}
			seen[id] = true
		}
		if len(seen) != want {
			t.Fatalf("%d rows returned, want %d", len(seen), want)
		}
	}
	for _, sort := range []string{"", "-created", "priority", "-updated"} {
		t.Run("Items"+sort, func(t *testing.T) {
			ids := walk(t, "/v1/projects/alpha/items", "items", sort)
			once(t, ids, n)
			for _, id := range ids {
				if !want[id] {
					t.Fatalf("unknown item %s", id)
				}
			}
		})
	}
	t.Run("Leases", func(t *testing.T) { once(t, walk(t, "/v1/projects/alpha/leases", "leases", ""), n) })
	t.Run("Attention", func(t *testing.T) { once(t, walk(t, "/v1/projects/alpha/attention", "attention", ""), n) })
}

// TestPageByteBudgetEncoded: the byte budget bounds a page's JSON as the
// client receives it, not its rows as stored: texts and JSON values of
// <, > and & (escaped to 6 bytes each, \u003c) end a page at page.MaxBytes
// of their encoding, and walking the cursors still returns every row
// exactly once. The budget used to count stored bytes, so a page of such
// rows was 6 times over it.
func TestPageByteBudgetEncoded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("alpha")
	agent := e.mustToken("alpha", "bot", "agent")
	const n = 8
	html := strings.Repeat("<&>", 50<<10) // 150 KiB stored, 900 KiB encoded
	for i := range n {
		e.do("POST", "/v1/projects/alpha/items", adminToken, map[string]any{
			"title": fmt.Sprintf("<b>%d</b>", i), "body": html, "metadata": map[string]string{"m": html[:3<<10]},
		}).ok(t, 201, nil)
	}
	for range n {
		var claim struct {
			Lease struct {
				ID    string
				Epoch int64
			}
		}
		e.do("POST", "/v1/projects/alpha/claims", agent.Token, map[string]any{"worker": "w"}).ok(t, 201, &claim)
		path := "/v1/leases/" + claim.Lease.ID
		e.do("POST", path+"/attention", agent.Token, map[string]any{
			"epoch": claim.Lease.Epoch, "question": "<which>?", "blocking": false, "context": map[string]string{"x": html},
		}).ok(t, 201, nil)
		e.do("POST", path+"/complete", agent.Token, map[string]any{"epoch": claim.Lease.Epoch, "result": map[string]string{"x": html}}).ok(t, 200, nil)
	}
	for _, tc := range []struct{ name, path, member, sort string }{
		{"Items", "/v1/projects/alpha/items", "items", ""},
		{"ItemsNewest", "/v1/projects/alpha/items", "items", "-created"},
		{"ItemsPriority", "/v1/projects/alpha/items", "items", "priority"},
		{"ItemsUpdated", "/v1/projects/alpha/items", "items", "-updated"},
		{"Leases", "/v1/projects/alpha/leases", "leases", ""},
		{"Attention", "/v1/projects/alpha/attention", "attention", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			cursor, pages := "", 0
			for {
				q := url.Values{"limit": {"500"}}
				if tc.sort != "" {
					q.Set("sort", tc.sort)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var got map[string]json.RawMessage
				e.do("GET", tc.path+"?"+q.Encode(), adminToken, nil).ok(t, 200, &got)
				var rows []struct{ ID string }
				if err := json.Unmarshal(got[tc.member], &rows); err != nil {
					t.Fatal(err)
				}
				if len(rows) == 0 {
					t.Fatalf("page %d is empty", pages)
				}
				if len(rows) > 1 && len(got[tc.member]) > page.MaxBytes {
					t.Fatalf("page %d: %d rows in %d bytes of JSON, over the budget of %d", pages, len(rows), len(got[tc.member]), page.MaxBytes)
				}
				for _, r := range rows {
					if seen[r.ID] {
						t.Fatalf("row %s returned twice", r.ID)
					}
					seen[r.ID] = true
				}
				pages++
				var next *string
				if err := json.Unmarshal(got["next_cursor"], &next); err != nil || next == nil {
					break
				}
				cursor = *next
			}
			if len(seen) != n || pages < 2 {
				t.Fatalf("%d rows in %d pages, want %d rows in more than one page", len(seen), pages, n)
			}
		})
	}
}

// TestPageByteBudgetBlockedBy: what keeps an item from being claimed is
// in the page's budget too: each item of a list names up to
// graph.MaxBlockedByRefs of its prerequisites with their titles, so 80
// items waiting on the same 20 prerequisites of 500 escaped characters
// (about 60 KiB of JSON each) take two pages, every item once. The budget
// was spent before the explanations were read, so the 100 items were one
// page of about 5 MiB.
func TestPageByteBudgetBlockedBy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("alpha")
	const prereqs, waiters = 20, 80
	var plan []map[string]any
	var keys []string
	for i := range prereqs {
		key := fmt.Sprintf("p%d", i)
		keys = append(keys, key)
		plan = append(plan, map[string]any{"key": key, "title": fmt.Sprintf("%02d", i) + strings.Repeat("<", 498)})
	}
	for i := range waiters {
		plan = append(plan, map[string]any{"key": fmt.Sprintf("w%d", i), "title": fmt.Sprintf("waiter %d", i), "depends_on": keys})
	}
	e.do("POST", "/v1/projects/alpha/plans", adminToken, map[string]any{"items": plan}).ok(t, 201, nil)
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var got map[string]json.RawMessage
		e.do("GET", "/v1/projects/alpha/items?"+q.Encode(), adminToken, nil).ok(t, 200, &got)
		var rows []struct{ ID string }
		if err := json.Unmarshal(got["items"], &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			t.Fatalf("page %d is empty", pages)
		}
		if len(rows) > 1 && len(got["items"]) > page.MaxBytes {
			t.Fatalf("page %d: %d items in %d bytes of JSON, over the budget of %d", pages, len(rows), len(got["items"]), page.MaxBytes)
		}
		for _, r := range rows {
			if seen[r.ID] {
				t.Fatalf("item %s returned twice", r.ID)
			}
			seen[r.ID] = true
		}
		pages++
		var next *string
		if err := json.Unmarshal(got["next_cursor"], &next); err != nil || next == nil {
			break
		}
		cursor = *next
	}
	if len(seen) != prereqs+waiters || pages < 2 {
		t.Fatalf("%d items in %d pages, want %d in more than one page", len(seen), pages, prereqs+waiters)
	}
}
