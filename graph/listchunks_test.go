package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/page"
)

// walkItems lists every page of the order at limit and returns the items
// in the order the pages gave them.
func walkItems(t *testing.T, f fixture, order ItemOrder, limit int) []Item {
	t.Helper()
	var all []Item
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("order %q: no last page after %d pages", order, pages)
		}
		p, err := f.svc.ListItems(context.Background(), f.project, ListFilter{Order: order, Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("ListItems(%q, limit %d): %v", order, limit, err)
		}
		if len(p.Items) == 0 && p.NextCursor != "" {
			t.Fatalf("order %q: an empty page with a next cursor", order)
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all
		}
		cursor = p.NextCursor
	}
}

// itemOrderCompare compares two items in a list order: its key, then the
// sequence, both reversed for a descending order.
func itemOrderCompare(order ItemOrder) func(a, b Item) int {
	asc := func(a, b Item) int {
		switch strings.TrimPrefix(string(order), "-") {
		case "priority":
			if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
				return c
			}
		case "updated":
			if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Seq, b.Seq)
	}
	if strings.HasPrefix(string(order), "-") {
		return func(a, b Item) int { return asc(b, a) }
	}
	return asc
}

// TestListItemsChunkedPagesAreExact: a list read in chunks (page.Read)
// and cut by its limit or its byte budget (some items carry 900 KiB
// bodies) gives every item exactly once across its pages, in its order,
// in every order (the sorted ones merge open and finished items), at
// limits below, across and above a chunk.
func TestListItemsChunkedPagesAreExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	const n = 140
	want := map[uuid.UUID]bool{}
	for i := range n {
		f.clk.Advance(time.Duration(i%7) * time.Second)
		body := ""
		if i%23 == 5 {
			body = strings.Repeat("b", 900<<10)
		}
		it, err := f.svc.CreateItem(ctx, f.project, NewItem{
			Title: fmt.Sprintf("chunk %03d", i), Body: body, Priority: int32(i % 5), CreatedBy: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
		want[it.ID] = true
		switch i % 9 {
		case 2:
			f.mustFinish(t, it.ID, StatusDone)
		case 6:
			f.mustFinish(t, it.ID, StatusCancelled)
		}
	}
	for _, order := range ItemOrders {
		for _, limit := range []int{7, page.FirstChunk, 100, page.Max} {
			t.Run(fmt.Sprintf("%s/%d", order, limit), func(t *testing.T) {
				got := walkItems(t, f, order, limit)
				seen := map[uuid.UUID]bool{}
				compare := itemOrderCompare(order)
				for i, it := range got {
					if seen[it.ID] {
						t.Fatalf("item %q (seq %d) on two pages", it.Title, it.Seq)
					}
					seen[it.ID] = true
					if i > 0 && compare(got[i-1], it) >= 0 {
						t.Fatalf("%q (seq %d) listed before %q (seq %d), out of order", got[i-1].Title, got[i-1].Seq, it.Title, it.Seq)
					}
				}
				if len(seen) != len(want) {
					t.Fatalf("%d items listed across the pages, want %d", len(seen), len(want))
				}
			})
		}
	}
}

// TestListItemsMemoryIsBoundedByTheBudget measures what one list request
// allocates over items of a 1 MiB body and 1 MiB of metadata: a page at
// limit 100 holds one such item (the budget is 4 MiB), and the list
// reads its rows in chunks (page.Read) until the budget is spent, so it
// allocates about a chunk of rows, not the limit+1 rows it reads when
// the read is bounded by rows alone (about 2 MiB a row).
//
// Not parallel: runtime.MemStats counts the whole process, and a test
// that is not parallel runs alone.
func TestListItemsMemoryIsBoundedByTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MiB of items")
	}
	f := setup(t)
	ctx := context.Background()
	const n, limit = 60, 100
	meta, _ := json.Marshal(map[string]string{"m": strings.Repeat("m", MaxMetadataBytes-16)})
	for i := range n {
		f.clk.Advance(time.Second)
		_, err := f.svc.CreateItem(ctx, f.project, NewItem{
			Title: fmt.Sprintf("big %02d", i), Body: strings.Repeat("b", MaxBodyBytes), Metadata: meta,
			Priority: int32(i % 3), CreatedBy: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	const bound = 64 << 20
	for _, order := range ItemOrders {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := f.svc.ListItems(ctx, f.project, ListFilter{Order: order, Limit: limit})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("order %q, limit %d: %d items on the page, %.1f MiB allocated", order, limit, len(p.Items), float64(alloc)/(1<<20))
		if len(p.Items) != 1 || p.NextCursor == "" {
			t.Fatalf("order %q: %d items, next cursor %q; want 1 item of 2 MiB and a next page", order, len(p.Items), p.NextCursor)
		}
		if alloc > bound {
			t.Errorf("order %q: one page allocated %.1f MiB, over %d MiB: the read is not bounded by the budget", order, float64(alloc)/(1<<20), bound>>20)
		}
	}
}
