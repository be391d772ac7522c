package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestItemHistoryPageReadsTheItemsLeases: a page of one item's leases
// (GET /v1/projects/{p}/items/{id}/leases: History with an item) reads
// that item's leases, not the project's history, in every order and
// window, on a generic plan (the plan PostgreSQL keeps for a statement
// after its fifth execution) made from statistics that predate the
// project's growth: with 60,000 leases of other items in the project,
// each page of the item's three leases reads at most 60 pages of leases,
// lease_refusals and their indexes (a walk of the project's history in
// grant order reads thousands).
//
// A new database (dbtest.Fresh): the bound counts pages read and depends
// on the plan the statistics and sizes on disk choose, and the test
// alters the table's options.
func TestItemHistoryPageReadsTheItemsLeases(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t)
	ctx := context.Background()
	var project, item uuid.UUID
	var first time.Time
	setup := []string{
		`ALTER TABLE leases SET (autovacuum_enabled = false)`,
		`ALTER TABLE items SET (autovacuum_enabled = false)`,
		`INSERT INTO projects (name) VALUES ('busy')`,
		// The item, with three ended leases, the first of the project.
		`INSERT INTO items (project_id, title, created_by, epoch)
		 SELECT id, 'the item', 'test', 3 FROM projects WHERE name = 'busy'`,
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		 SELECT i.project_id, i.id, e, 'w' || e, 'test', now() - interval '1 day' + e * interval '1 minute',
		        now() + interval '1 day', now() - interval '1 day' + e * interval '1 minute' + e * interval '1 second', 'released'
		 FROM items i, generate_series(1, 3) e ORDER BY e`,
		// Statistics of the project as it was then.
		`ANALYZE leases, items`,
		// Then the project's history grows: 6,000 items claimed ten times each.
		`INSERT INTO items (project_id, title, created_by, epoch)
		 SELECT id, 'other', 'test', 10 FROM projects, generate_series(1, 6000) WHERE name = 'busy'`,
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		 SELECT i.project_id, i.id, e, 'w', 'test', now() - interval '1 hour', now() + interval '1 day', now() - interval '1 hour', 'released'
		 FROM items i, generate_series(1, 10) e WHERE i.title = 'other' ORDER BY e, i.seq`,
	}
	// The setup's rows are written with the triggers off where the user
	// may (a superuser's session_replication_role = replica): with the
	// statistics of one item, each foreign-key check of the 6,000 items'
	// texts and the 60,000 leases was planned as a walk of the project's
	// items, and the setup took 40 s of the test's 45. What is measured
	// (the pages the history's statements read under those statistics)
	// does not depend on the events, counters and texts the triggers
	// write.
	setupTx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer setupTx.Rollback(ctx)
	var super bool
	if err := setupTx.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super {
		if _, err := setupTx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range setup {
		if _, err := setupTx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := setupTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT project_id, id FROM items WHERE title = 'the item'`).Scan(&project, &item); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT min(acquired_at) FROM leases WHERE item_id = $1`, item).Scan(&first); err != nil {
		t.Fatal(err)
	}
	since := first.Add(-time.Second)
	cases := []struct {
		name   string
		filter lease.HistoryFilter
	}{
		{"Acquired", lease.HistoryFilter{}},
		{"Newest", lease.HistoryFilter{Order: lease.OrderNewest}},
		{"Shortest", lease.HistoryFilter{Order: lease.OrderShortest}},
		{"Longest", lease.HistoryFilter{Order: lease.OrderLongest}},
		{"Worker", lease.HistoryFilter{Worker: "w2"}},
		{"Outcome", lease.HistoryFilter{Outcome: ptrOutcome(lease.OutcomeReleased)}},
		{"Window", lease.HistoryFilter{Since: &since}},
		{"WindowNewest", lease.HistoryFilter{Since: &since, Order: lease.OrderNewest}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
				t.Fatal(err)
			}
			leases := lease.NewService(tx, clock.NewStub(first.Add(time.Hour)), lease.Config{})
			f := c.filter
			f.ItemID, f.Limit = &item, 2
			want := 3
			if f.Worker != "" {
				want = 1
			}
			got := 0
			for pages := 0; pages < 3; pages++ {
				before := leasePagesRead(t, tx)
				p, err := leases.History(ctx, project, f)
				if err != nil {
					t.Fatal(err)
				}
				if read := leasePagesRead(t, tx) - before; read > 60 {
					t.Errorf("page %d of the item's leases read %d pages", pages+1, read)
				}
				for _, l := range p.Leases {
					if l.ItemID != item {
						t.Fatalf("a lease of item %s in the item's history", l.ItemID)
					}
				}
				got += len(p.Leases)
				if f.Cursor = p.NextCursor; f.Cursor == "" {
					break
				}
			}
			if got != want {
				t.Errorf("%d leases, want %d", got, want)
			}
		})
	}
}

func ptrOutcome(o lease.Outcome) *lease.Outcome { return &o }

// leasePagesRead is how many pages of leases, lease_refusals and their
// indexes the transaction has read so far (hits and reads).
func leasePagesRead(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	err := tx.QueryRow(context.Background(), `
		SELECT coalesce(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0)::bigint
		FROM pg_class c
		WHERE c.oid IN ('leases'::regclass, 'lease_refusals'::regclass)
		   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('leases'::regclass, 'lease_refusals'::regclass))`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
