package lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestHistoryWindowReadsItsIndex: a history page in a time window (since,
// until) reads the window from leases_by_acquired in order (migration
// 00054), in either order and on a generic plan, instead of walking the
// project's history in grant order and testing each lease's acquisition
// time (at 1,000,000 ended leases, a page of the last ten minutes read the
// whole history). The pages hold exactly the window's leases, in
// acquisition order, leases acquired at the same instant in grant order,
// whatever the page size; a cursor of a window's page is refused without
// a window, and the other way round.
func TestHistoryWindowReadsItsIndex(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	// 2,000 ended leases acquired a minute apart, oldest first in grant
	// order; the leases of items 1,991 to 1,994 were acquired at one
	// instant, the 1,991st's.
	f.doneItems(t, 2000)
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT i.project_id, i.id, 1, 'w', 'test', a.at, a.at + interval '1 hour', a.at + interval '1 second', 'completed'
		FROM (SELECT project_id, id, row_number() OVER (ORDER BY seq) AS n FROM items WHERE project_id = $1) i
		CROSS JOIN LATERAL (SELECT now() - interval '2000 minutes'
		                           + (CASE WHEN i.n BETWEEN 1991 AND 1994 THEN 1991 ELSE i.n END) * interval '1 minute' AS at) a
		ORDER BY i.n`, f.project); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id uuid.UUID
		at time.Time
	}
	var all []row // grant order
	rows, err := f.conn.Query(f.ctx, `SELECT id, acquired_at FROM leases WHERE project_id = $1 ORDER BY seq`, f.project)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.at); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	if err := rows.Err(); err != nil || len(all) != 2000 {
		t.Fatalf("leases loaded: %d, %v", len(all), err)
	}
	// The plan PostgreSQL keeps for a statement after its fifth execution,
	// made for any window: the plan that walked the history.
	if _, err := f.conn.Exec(f.ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	scans := func(index string) int64 { return f.indexScans(t, index) }
	ptr := func(t time.Time) *time.Time { return &t }

	for name, w := range map[string]struct {
		since, until *time.Time
		want         []row // oldest first
	}{
		// The last 15 minutes: the last 15 leases, the four acquired at
		// one instant among them.
		"Since": {since: ptr(all[1985].at), want: all[1985:]},
		"Until": {until: ptr(all[12].at), want: all[:12]},
		"Both":  {since: ptr(all[1000].at), until: ptr(all[1020].at), want: all[1000:1020]},
	} {
		t.Run(name, func(t *testing.T) {
			for _, order := range []lease.HistoryOrder{lease.OrderAcquired, lease.OrderNewest} {
				want := w.want
				if order == lease.OrderNewest {
					want = make([]row, len(w.want))
					for i, r := range w.want {
						want[len(want)-1-i] = r
					}
				}
				for _, limit := range []int{1, 3, 100} {
					history, byAcquired := scans("leases_history"), scans("leases_by_acquired")
					var got []uuid.UUID
					cursor := ""
					for pages := 0; pages <= len(want); pages++ {
						p, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{
							Since: w.since, Until: w.until, Order: order, Limit: limit, Cursor: cursor})
						if err != nil {
							t.Fatal(err)
						}
						for _, l := range p.Leases {
							got = append(got, l.ID)
						}
						if cursor = p.NextCursor; cursor == "" {
							break
						}
					}
					if len(got) != len(want) {
						t.Fatalf("order %q, limit %d: %d leases, want %d", order, limit, len(got), len(want))
					}
					for i := range want {
						if got[i] != want[i].id {
							t.Fatalf("order %q, limit %d: lease %d is %s, want %s (acquired %s)", order, limit, i, got[i], want[i].id, want[i].at)
						}
					}
					if scans("leases_history") != history {
						t.Errorf("order %q, limit %d: the pages walked the history in grant order (leases_history)", order, limit)
					}
					if scans("leases_by_acquired") == byAcquired {
						t.Errorf("order %q, limit %d: the pages did not read leases_by_acquired", order, limit)
					}
				}
			}
		})
	}

	t.Run("ErrCursorOfAnotherList", func(t *testing.T) {
		windowed, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Since: ptr(all[1900].at), Limit: 2})
		if err != nil || windowed.NextCursor == "" {
			t.Fatalf("windowed page: cursor %q, %v", windowed.NextCursor, err)
		}
		plain, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Limit: 2})
		if err != nil || plain.NextCursor == "" {
			t.Fatalf("plain page: cursor %q, %v", plain.NextCursor, err)
		}
		if _, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Cursor: windowed.NextCursor, Limit: 2}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("a window's cursor without the window: %v, want invalid_argument", err)
		}
		if _, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Since: ptr(all[1900].at), Cursor: plain.NextCursor, Limit: 2}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("a cursor without a window, in a window: %v, want invalid_argument", err)
		}
	})
}
