package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// wantOrder fails unless the parts appear in the body in this order.
func wantOrder(t *testing.T, r response, parts ...string) {
	t.Helper()
	at := -1
	for _, p := range parts {
		i := strings.Index(r.body, p)
		if i < 0 {
			t.Fatalf("%s: body lacks %q", r.Request.URL, p)
		}
		if i < at {
			t.Fatalf("%s: %q comes before %q, want the order %q", r.Request.URL, p, parts[0], parts)
		}
		at = i
	}
}

// TestSortedTables: the items list and the lease history show the newest
// first, and their column headers are links that sort on the server, with
// aria-sort on the sorted column.
func TestSortedTables(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for i, title := range []string{"alpha-item", "beta-item", "gamma-item"} {
		if _, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: title, Priority: int32([]int{5, 1, 3}[i]), CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	b := e.signIn(e.human)

	t.Run("ItemsNewestFirst", func(t *testing.T) {
		r := b.get("/p/acme/items?view=list")
		wantStatus(t, r, http.StatusOK)
		wantOrder(t, r, "gamma-item", "beta-item", "alpha-item")
		wantBody(t, r, `<th class="sortable" aria-sort="descending"><a href="/p/acme/items?sort=created&amp;view=list"`,
			`<a href="/p/acme/items?sort=-priority&amp;view=list"`)
		if strings.Count(r.body, "aria-sort=") != 1 {
			t.Errorf("aria-sort on %d columns, want only the sorted one", strings.Count(r.body, "aria-sort="))
		}
	})
	t.Run("ItemsByColumn", func(t *testing.T) {
		r := b.get("/p/acme/items?view=list&sort=created")
		wantStatus(t, r, http.StatusOK)
		wantOrder(t, r, "alpha-item", "beta-item", "gamma-item")
		wantBody(t, r, `aria-sort="ascending"><a href="/p/acme/items?view=list"`)
		r = b.get("/p/acme/items?view=list&sort=-priority")
		wantStatus(t, r, http.StatusOK)
		wantOrder(t, r, "alpha-item", "gamma-item", "beta-item")
		// Filtering keeps the order; the board has none.
		wantBody(t, r, `<input type="hidden" name="sort" value="-priority">`)
		r = b.get("/p/acme/items?view=list&sort=priority&q=item")
		wantOrder(t, r, "beta-item", "gamma-item", "alpha-item")
	})
	t.Run("ErrItemsSort", func(t *testing.T) {
		wantStatus(t, b.get("/p/acme/items?view=list&sort=title"), http.StatusBadRequest)
	})

	t.Run("HistoryNewestFirst", func(t *testing.T) {
		for range 3 {
			c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.leases.Release(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "next"); err != nil {
				t.Fatal(err)
			}
		}
		// Claims take the highest priority first: alpha (5) three times,
		// as each release gives it back. Epochs 1, 2, 3 tell them apart.
		r := b.get("/p/acme/leases")
		wantStatus(t, r, http.StatusOK)
		wantOrder(t, r, `<td class="num">3</td>`, `<td class="num">2</td>`, `<td class="num">1</td>`)
		wantBody(t, r, `aria-sort="descending"><a href="/p/acme/leases?sort=acquired"`, `<a href="/p/acme/leases?sort=-ran"`)
		r = b.get("/p/acme/leases?sort=acquired")
		wantOrder(t, r, `<td class="num">1</td>`, `<td class="num">2</td>`, `<td class="num">3</td>`)
		wantBody(t, r, `aria-sort="ascending"><a href="/p/acme/leases"`)
		r = b.get("/p/acme/leases?sort=-ran&worker=w1")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `aria-sort="descending"><a href="/p/acme/leases?sort=ran&amp;worker=w1"`)
		if strings.Contains(r.body, "error-box") {
			t.Errorf("sorting by run time failed:\n%.2000s", r.body)
		}
		// The CSV export stays oldest first.
		csv := b.get("/p/acme/leases.csv")
		lines := strings.Split(strings.TrimSpace(csv.body), "\n")
		if len(lines) != 4 || !strings.Contains(lines[1], ",1,") || !strings.Contains(lines[3], ",3,") {
			t.Errorf("csv not oldest first:\n%s", csv.body)
		}
	})
	t.Run("ErrHistorySort", func(t *testing.T) {
		// The page with its error box, answered 400 as the API answers
		// the same sort.
		r := b.get("/p/acme/leases?sort=worker")
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, "error-box", "unknown order")
	})
}
