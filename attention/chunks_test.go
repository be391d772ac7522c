package attention_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/page"
)

// bigContext is a request context of a JSON text of n bytes.
func bigContext(n int) []byte { return []byte(`"` + strings.Repeat("c", n) + `"`) }

// TestListsChunkedPagesAreExact: the project's list (List), an item's
// (ForItem) and an item's newest first (Latest), read in chunks
// (page.Read) and cut by their limit or their byte budget (every 23rd
// request has a 900 KiB context), give every request exactly once across
// their pages, in order, at limits below, across and above a chunk.
func TestListsChunkedPagesAreExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.item(t, "a")
	const n = 120
	var want []uuid.UUID // oldest first
	for i := range n {
		in := ask(fmt.Sprintf("q%03d", i), false)
		if i%23 == 5 {
			in.Context = bigContext(900 << 10)
		}
		want = append(want, f.mustOpen(t, a, in).ID)
	}
	type lister func(cursor string, limit int) ([]attention.Request, string, error)
	for name, list := range map[string]lister{
		"List": func(cursor string, limit int) ([]attention.Request, string, error) {
			p, err := f.svc.List(f.ctx, f.project, attention.Filter{Cursor: cursor, Limit: limit})
			return p.Requests, p.NextCursor, err
		},
		"ForItem": func(cursor string, limit int) ([]attention.Request, string, error) {
			p, err := f.svc.ForItem(f.ctx, f.project, a, cursor, limit)
			return p.Requests, p.NextCursor, err
		},
		// Latest's pages come newest first: each page is put before
		// the ones read so far, below.
		"Latest": func(cursor string, limit int) ([]attention.Request, string, error) {
			h, err := f.svc.Latest(f.ctx, f.project, a, cursor, limit)
			return h.Requests, h.Older, err
		},
	} {
		for _, limit := range []int{7, page.FirstChunk, 100, page.Max} {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				var got []uuid.UUID
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > 1000 {
						t.Fatal("no last page")
					}
					rs, next, err := list(cursor, limit)
					if err != nil {
						t.Fatal(err)
					}
					ids := make([]uuid.UUID, len(rs))
					for i, r := range rs {
						ids[i] = r.ID
					}
					if name == "Latest" {
						got = append(ids, got...)
					} else {
						got = append(got, ids...)
					}
					if cursor = next; cursor == "" {
						break
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%d requests across the pages, not the %d asked, each once, in order", len(got), len(want))
				}
			})
		}
	}
}

// TestListMemoryIsBoundedByTheBudget measures what one page of the
// project's requests allocates over requests of a 2 MiB context: a page
// at limit 100 holds one (the budget is 4 MiB), and the list reads in
// chunks (page.Read) until the budget is spent, so it allocates about a
// chunk of rows, not the limit+1 rows it read when the read was bounded
// by rows alone.
//
// Not parallel: runtime.MemStats counts the whole process, and a test
// that is not parallel runs alone.
func TestListMemoryIsBoundedByTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MiB of requests")
	}
	f := setup(t)
	a := f.item(t, "a")
	const n, limit = 60, 100
	for i := range n {
		in := ask(fmt.Sprintf("q%02d", i), false)
		in.Context = bigContext(2 << 20)
		f.mustOpen(t, a, in)
	}
	const bound = 64 << 20
	for name, list := range map[string]func() (int, string, error){
		"List": func() (int, string, error) {
			p, err := f.svc.List(f.ctx, f.project, attention.Filter{Limit: limit})
			return len(p.Requests), p.NextCursor, err
		},
		"ForItem": func() (int, string, error) {
			p, err := f.svc.ForItem(f.ctx, f.project, a, "", limit)
			return len(p.Requests), p.NextCursor, err
		},
		"Latest": func() (int, string, error) {
			h, err := f.svc.Latest(f.ctx, f.project, a, "", limit)
			return len(h.Requests), h.Older, err
		},
	} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, next, err := list()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s, limit %d: %d requests on the page, %.1f MiB allocated", name, limit, got, float64(alloc)/(1<<20))
		if got != 1 || next == "" {
			t.Fatalf("%s: %d requests, next cursor %q; want 1 request of 2 MiB and a next page", name, got, next)
		}
		if alloc > bound {
			t.Errorf("%s: one page allocated %.1f MiB, over %d MiB: the read is not bounded by the budget", name, float64(alloc)/(1<<20), bound>>20)
		}
	}
}

// TestInboxChunkedPagesAreExact: the inbox read in chunks (page.Read) by
// keys (its overdue requests first, then the others, each oldest first),
// its pages of up to limit requests, or fewer when those read overran the
// byte budget (every 23rd request has a 900 KiB context; the page then
// ends before the request that overran it, as the web inbox's does),
// gives every open request exactly once, in order.
func TestInboxChunkedPagesAreExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.item(t, "a")
	const n = 120
	var overdue, waiting []uuid.UUID
	for i := range n {
		in := ask(fmt.Sprintf("q%03d", i), false)
		if i%23 == 5 {
			in.Context = bigContext(900 << 10)
		}
		r := f.mustOpen(t, a, in)
		if i%4 == 1 {
			if _, err := f.conn.Exec(f.ctx, `UPDATE attention_requests SET overdue_at = now() WHERE id = $1`, r.ID); err != nil {
				t.Fatal(err)
			}
			overdue = append(overdue, r.ID)
		} else {
			waiting = append(waiting, r.ID)
		}
	}
	want := append(overdue, waiting...)
	for _, limit := range []int{7, page.FirstChunk, 51, page.Max} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			var got []uuid.UUID
			var after *attention.InboxKey
			for pages := 0; ; pages++ {
				if pages > 1000 {
					t.Fatal("no last page")
				}
				rs, err := f.svc.Inbox(f.ctx, f.project, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) == 0 {
					break
				}
				// The page: the requests within the budget (at least
				// one), as a page of the inbox shows them.
				shown := rs[:page.Fit(len(rs), func(i int) int { return rs[i].Size() })]
				for _, r := range shown {
					got = append(got, r.ID)
				}
				k := shown[len(shown)-1].Key()
				after = &k
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%d requests across the pages, not the %d open, each once, in order", len(got), len(want))
			}
		})
	}
}

// TestInboxMemoryIsBoundedByTheBudget measures what one read of the inbox
// (as the web inbox asks it: 51 requests) allocates over requests of a
// 2 MiB context: the inbox reads in chunks (page.Read) until the budget
// is spent, so it allocates about a chunk of rows, not the 51 it read when
// the read was bounded by rows alone.
//
// Not parallel: runtime.MemStats counts the whole process, and a test
// that is not parallel runs alone.
func TestInboxMemoryIsBoundedByTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MiB of requests")
	}
	f := setup(t)
	a := f.item(t, "a")
	const n, limit = 60, 51
	for i := range n {
		in := ask(fmt.Sprintf("q%02d", i), false)
		in.Context = bigContext(2 << 20)
		f.mustOpen(t, a, in)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rs, err := f.svc.Inbox(f.ctx, f.project, nil, limit)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("limit %d: %d requests read, %.1f MiB allocated", limit, len(rs), float64(alloc)/(1<<20))
	if fit := page.Fit(len(rs), func(i int) int { return rs[i].Size() }); fit != 1 {
		t.Fatalf("%d requests within the budget, want 1 of 2 MiB", fit)
	}
	const bound = 64 << 20
	if alloc > bound {
		t.Errorf("one read allocated %.1f MiB, over %d MiB: the read is not bounded by the budget", float64(alloc)/(1<<20), bound>>20)
	}
}
