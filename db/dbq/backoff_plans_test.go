package dbq_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestClaimsDoNotReadItemsInBackoff: 3,000 items of higher priority wait
// out a retry backoff (their leases failed, as a downstream outage makes
// them) and one item is ready. The claim as the REST route runs it
// (ClaimItemDirect), the transactional claim (ClaimItem), a batch claim
// (ClaimItems) and the probe after a claim that found nothing
// (ClaimNeedsTx) each read at most 100 rows of items (this transaction's
// pg_stat counters, nested statements included) and 300 pages: they
// walked the 3,000 items in claim order and threw each away for its
// not_before (migration 00141).
func TestClaimsDoNotReadItemsInBackoff(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('outage') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO items (project_id, title, priority, created_by)
		SELECT $1, 'failing ' || g, 10, 'test' FROM generate_series(1, 3000) g`, project); err != nil {
		t.Fatal(err)
	}
	var ready uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by)
		VALUES ($1, 'ready', 0, 'test') RETURNING id`, project).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	// The 3,000 are claimed and fail, each with an hour's backoff.
	q := dbq.New()
	failed := "failed"
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := q.ClaimItems(ctx, tx, dbq.ClaimItemsParams{
			// An hour's TTL: the 3,000 endings must come before the leases'
			// expiry, however loaded the machine.
			ProjectID: project, Labels: []string{}, Worker: "w", MaxItems: 3000, Principal: "agent:w", TtlMs: 3_600_000,
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := q.EndLease(ctx, tx, dbq.EndLeaseParams{
				Outcome: &failed, ProjectID: project, LeaseID: r.Lease.ID, Epoch: r.Lease.Epoch,
				Failed: true, BackoffMs: 3_600_000, MaxBackoffMs: 3_600_000,
			}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE items`); err != nil {
		t.Fatal(err)
	}

	conn, trace := tracedConn(t, pool)
	// Each case runs its statement once for real in a savepoint (to learn
	// its SQL and arguments, undone), then under EXPLAIN ANALYZE; the
	// transaction is rolled back.
	cases := map[string]func(tx pgx.Tx) error{
		"ClaimItemDirect": func(tx pgx.Tx) error {
			r, err := q.ClaimItemDirect(ctx, tx, dbq.ClaimItemDirectParams{
				ProjectID: project, Labels: []string{}, Worker: "w", LeaseID: uuid.New(), Principal: "agent:w", TtlMs: 60000,
			})
			if err == nil && r.Item.ID != ready {
				t.Errorf("ClaimItemDirect took %v, want the ready item %v", r.Item.ID, ready)
			}
			return err
		},
		"ClaimItem": func(tx pgx.Tx) error {
			r, err := q.ClaimItem(ctx, tx, dbq.ClaimItemParams{
				ProjectID: project, Labels: []string{}, Worker: "w", LeaseID: uuid.New(), Principal: "agent:w", TtlMs: 60000,
			})
			if err == nil && r.Lease.ItemID != ready {
				t.Errorf("ClaimItem took %v, want the ready item %v", r.Lease.ItemID, ready)
			}
			return err
		},
		"ClaimItems": func(tx pgx.Tx) error {
			rows, err := q.ClaimItems(ctx, tx, dbq.ClaimItemsParams{
				ProjectID: project, Labels: []string{}, Worker: "w", Guarded: true, MaxItems: 10, Principal: "agent:w", TtlMs: 60000,
			})
			if err == nil && (len(rows) != 1 || rows[0].Item.ID != ready) {
				t.Errorf("ClaimItems took %d items, want the ready item alone", len(rows))
			}
			return err
		},
		"ClaimNeedsTx": func(tx pgx.Tx) error {
			// After the ready item is taken: nothing is claimable, the
			// items in backoff keep the claim from being hopeless.
			if _, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now()
				WHERE project_id = $1 AND id = $2`, project, ready); err != nil {
				return err
			}
			r, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{}, Worker: "w"})
			if err == nil && (r.NeedsTx || r.Hopeless || r.Missed) {
				t.Errorf("ClaimNeedsTx = %+v, want nothing missed, not hopeless, no transaction", r)
			}
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			sp, err := tx.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := run(sp); err != nil {
				t.Fatal(err)
			}
			sql, args := trace.last()
			if err := sp.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if name == "ClaimNeedsTx" {
				// The probe runs after the ready item is gone.
				if _, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now()
					WHERE project_id = $1 AND id = $2`, project, ready); err != nil {
					t.Fatal(err)
				}
			}
			before := itemRowsRead(t, tx)
			pages := explainPages(t, tx, sql, args)
			rows := itemRowsRead(t, tx) - before
			t.Logf("%s read %d rows of items, %v pages", name, rows, pages)
			if rows > 100 || pages > 300 {
				t.Errorf("%s read %d rows of items and %v pages past 3,000 items in backoff", name, rows, pages)
			}
		})
	}
}

// itemRowsRead is how many rows of items the transaction has read so far:
// the entries its index scans returned, and the rows of its table scans
// and bitmap scans (pg_stat's counters of the current transaction).
func itemRowsRead(t *testing.T, tx pgx.Tx) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(context.Background(), `
		SELECT pg_stat_get_xact_tuples_returned('items'::regclass)
		       + pg_stat_get_xact_tuples_fetched('items'::regclass)
		       + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(x.indexrelid)), 0)::bigint
		          FROM pg_index x WHERE x.indrelid = 'items'::regclass)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
