package lease_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// TestHistoryByRareOutcomeReadsItsIndex: a history page filtered by an
// outcome other than completed reads leases_rare_outcomes (migration 00053),
// which holds only such leases, in either order, instead of walking the
// project's whole history for the few that match; the answers are the
// filter's, page by page.
func TestHistoryByRareOutcomeReadsItsIndex(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	// 2,000 ended leases, three of them failed (the 500th, 1000th and
	// 1500th), the others completed.
	f.doneItems(t, 2000)
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT i.project_id, i.id, 1, 'w', 'test', now() - interval '1 hour' + i.seq * interval '1 ms',
		       now() + interval '1 hour', now() - interval '1 hour' + i.seq * interval '1 ms' + interval '1 second',
		       CASE WHEN i.title IN ('history 500', 'history 1000', 'history 1500') THEN 'failed' ELSE 'completed' END
		FROM items i WHERE i.project_id = $1 ORDER BY i.seq`, f.project); err != nil {
		t.Fatal(err)
	}
	var failed []uuid.UUID
	rows, err := f.conn.Query(f.ctx, `SELECT id FROM leases WHERE project_id = $1 AND outcome = 'failed' ORDER BY seq`, f.project)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		failed = append(failed, id)
	}
	if err := rows.Err(); err != nil || len(failed) != 3 {
		t.Fatalf("failed leases loaded: %d, %v", len(failed), err)
	}
	scans := func() int64 { return f.indexScans(t, "leases_rare_outcomes") }

	// Each page is a prepared statement on the test's one connection,
	// which PostgreSQL may run on a generic plan (made for any outcome)
	// from its sixth execution: ten rounds.
	outcome := lease.OutcomeFailed
	for round := 0; round < 10; round++ {
		for _, order := range []lease.HistoryOrder{lease.OrderAcquired, lease.OrderNewest} {
			want := failed
			if order == lease.OrderNewest {
				want = []uuid.UUID{failed[2], failed[1], failed[0]}
			}
			before := scans()
			var got []uuid.UUID
			cursor := ""
			for pages := 0; ; pages++ {
				p, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Outcome: &outcome, Order: order, Limit: 2, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range p.Leases {
					if l.Outcome == nil || *l.Outcome != lease.OutcomeFailed {
						t.Fatalf("order %q: lease %s with outcome %v in a page of failed leases", order, l.ID, l.Outcome)
					}
					got = append(got, l.ID)
				}
				if cursor = p.NextCursor; cursor == "" || pages > 3 {
					break
				}
			}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("order %q: failed leases %v, want %v", order, got, want)
			}
			if scans() == before {
				t.Errorf("round %d, order %q: the pages did not read leases_rare_outcomes (they walked the history)", round, order)
			}
		}
	}

	// The common outcome is found as before, in grant order.
	completed := lease.OutcomeCompleted
	p, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Outcome: &completed, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Leases) != 5 || p.NextCursor == "" {
		t.Fatalf("completed: %d leases, cursor %q", len(p.Leases), p.NextCursor)
	}
	for _, l := range p.Leases {
		if *l.Outcome != lease.OutcomeCompleted {
			t.Errorf("completed page holds a %s lease", *l.Outcome)
		}
	}
}
