package lease_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/page"
)

// endedLeases inserts an ended lease for each of n new done items, in
// grant order: lease i acquired i minutes after the first, running
// (i*7)%11 seconds (ties in the duration orders); every every-th lease
// (every 0: none) has a result (and, when progress is set, a progress) of
// a JSON text of big bytes.
func endedLeases(t *testing.T, f fixture, n, big, every int, progress bool) {
	t.Helper()
	f.doneItems(t, n)
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome, result, progress)
		SELECT i.project_id, i.id, 1, 'w', 'test', a.at, a.at + interval '1 hour',
		       a.at + ((i.n * 7) % 11) * interval '1 second', 'completed', r.v, CASE WHEN $4::bool THEN r.v END
		FROM (SELECT project_id, id, row_number() OVER (ORDER BY seq) AS n FROM items WHERE project_id = $1) i
		CROSS JOIN LATERAL (SELECT now() - interval '1 day' + i.n * interval '1 minute' AS at) a
		CROSS JOIN LATERAL (SELECT CASE WHEN $3::int > 0 AND i.n % $3::int = 0 THEN to_jsonb(repeat('r', $2::int)) ELSE '{"ok":true}'::jsonb END AS v) r
		ORDER BY i.n`, f.project, big, every, progress); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryChunkedPagesAreExact: the history read in chunks
// (page.Read), cut by its limit or by its byte budget (every 23rd lease
// has a 900 KiB result), gives every lease exactly once across its pages,
// in every order, with a window and without, at limits below, across and
// above a chunk.
func TestHistoryChunkedPagesAreExact(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	const n = 130
	endedLeases(t, f, n, 900<<10, 23, false)
	since := time.Now().Add(-48 * time.Hour)
	for _, order := range []lease.HistoryOrder{lease.OrderAcquired, lease.OrderNewest, lease.OrderShortest, lease.OrderLongest} {
		for _, window := range []bool{false, true} {
			for _, limit := range []int{7, page.FirstChunk, 100, page.Max} {
				t.Run(fmt.Sprintf("%s/window=%v/%d", order, window, limit), func(t *testing.T) {
					filter := lease.HistoryFilter{Order: order, Limit: limit}
					if window {
						filter.Since = &since
					}
					seen := map[uuid.UUID]bool{}
					var prev *lease.Lease
					for pages := 0; ; pages++ {
						if pages > 1000 {
							t.Fatal("no last page")
						}
						pg, err := f.leases.History(f.ctx, f.project, filter)
						if err != nil {
							t.Fatal(err)
						}
						for _, l := range pg.Leases {
							if seen[l.ID] {
								t.Fatalf("lease %s on two pages", l.ID)
							}
							seen[l.ID] = true
							if prev != nil && !historyOrdered(order, *prev, l) {
								t.Fatalf("lease %s (acquired %s) listed before lease %s (acquired %s), out of order", prev.ID, prev.AcquiredAt, l.ID, l.AcquiredAt)
							}
							prev = &l
						}
						if filter.Cursor = pg.NextCursor; filter.Cursor == "" {
							break
						}
					}
					if len(seen) != n {
						t.Fatalf("%d leases across the pages, want %d", len(seen), n)
					}
				})
			}
		}
	}
}

// historyOrdered reports whether a comes before b in the order; the
// leases of endedLeases were acquired in grant order, a minute apart, so
// their acquisition times order them as their grants do.
func historyOrdered(order lease.HistoryOrder, a, b lease.Lease) bool {
	ran := func(l lease.Lease) time.Duration { return l.EndedAt.Sub(l.AcquiredAt) }
	granted := a.AcquiredAt.Compare(b.AcquiredAt)
	switch order {
	case lease.OrderNewest:
		return granted > 0
	case lease.OrderShortest:
		return ran(a) < ran(b) || (ran(a) == ran(b) && granted < 0)
	case lease.OrderLongest:
		return ran(a) > ran(b) || (ran(a) == ran(b) && granted > 0)
	}
	return granted < 0
}

// TestHistoryMemoryIsBoundedByTheBudget measures what one page of the
// history allocates over leases of a 1 MiB result and 1 MiB of progress:
// a page at limit 100 holds one such lease (the budget is 4 MiB), and the
// history reads in chunks (page.Read) until the budget is spent, so it
// allocates about a chunk of rows, not the limit+1 rows of about 2 MiB
// each it read when the read was bounded by rows alone.
//
// Not parallel: runtime.MemStats counts the whole process, and a test
// that is not parallel runs alone.
func TestHistoryMemoryIsBoundedByTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MiB of leases")
	}
	f := setup(t, lease.Config{})
	const n, limit = 60, 100
	endedLeases(t, f, n, 1<<20, 1, true)
	const bound = 64 << 20
	for _, order := range []lease.HistoryOrder{lease.OrderAcquired, lease.OrderNewest, lease.OrderShortest, lease.OrderLongest} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		pg, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Order: order, Limit: limit})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("order %q, limit %d: %d leases on the page, %.1f MiB allocated", order, limit, len(pg.Leases), float64(alloc)/(1<<20))
		if len(pg.Leases) != 1 || pg.NextCursor == "" {
			t.Fatalf("order %q: %d leases, next cursor %q; want 1 lease of 2 MiB and a next page", order, len(pg.Leases), pg.NextCursor)
		}
		if alloc > bound {
			t.Errorf("order %q: one page allocated %.1f MiB, over %d MiB: the read is not bounded by the budget", order, float64(alloc)/(1<<20), bound>>20)
		}
	}
}
