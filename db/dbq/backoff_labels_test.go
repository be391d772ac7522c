package dbq_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestRareLabelClaimsDoNotReadItemsInBackoff: a label few ready items
// carry, none near the head of the claim order, is claimed through the
// labels' index (the rare-label path, migration 00096). 1,500 items that
// carry it wait out a retry backoff of an hour and one ready item carries
// it: the claim (ClaimItemDirect) and the probe after a claim that found
// nothing (ClaimNeedsTx's missed) read at most 600 rows of items (the
// head check reads 256), not every item in backoff that carries the
// label. An item carrying it whose backoff has passed and is not yet
// swept is still found, at its place in claim order.
func TestRareLabelClaimsDoNotReadItemsInBackoff(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('rare-outage') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	fill := []string{
		// The head of the claim order: 300 items without the label.
		`INSERT INTO items (project_id, title, priority, created_by)
		 SELECT $1, 'head ' || g, 20, 'test' FROM generate_series(1, 300) g`,
		`INSERT INTO items (project_id, title, priority, created_by, labels, failures, not_before, in_backoff)
		 SELECT $1, 'failing ' || g, 10, 'test', '{x}', 1, now() + interval '1 hour', true
		 FROM generate_series(1, 1500) g`,
	}
	for _, stmt := range fill {
		if _, err := pool.Exec(ctx, stmt, project); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var ready, due uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by, labels)
		VALUES ($1, 'ready', 0, 'test', '{x}') RETURNING id`, project).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE items`); err != nil {
		t.Fatal(err)
	}
	q := dbq.New()
	claim := func(tx pgx.Tx) (uuid.UUID, error) {
		r, err := q.ClaimItemDirect(ctx, tx, dbq.ClaimItemDirectParams{
			ProjectID: project, Labels: []string{"x"}, Worker: "w", LeaseID: uuid.New(), Principal: "agent:w", TtlMs: 60000,
		})
		return r.Item.ID, err
	}
	cases := []struct {
		name string
		run  func(t *testing.T, tx pgx.Tx)
	}{
		{"ClaimItemDirect", func(t *testing.T, tx pgx.Tx) {
			got, err := claim(tx)
			if err != nil {
				t.Fatal(err)
			}
			if got != ready {
				t.Errorf("ClaimItemDirect took %v, want the ready item %v", got, ready)
			}
		}},
		{"ClaimNeedsTx", func(t *testing.T, tx pgx.Tx) {
			r, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{"x"}, Worker: "w"})
			if err != nil {
				t.Fatal(err)
			}
			if r.NeedsTx || r.Hopeless || r.Missed {
				t.Errorf("ClaimNeedsTx = %+v, want nothing missed, not hopeless, no transaction", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if c.name == "ClaimNeedsTx" {
				// The probe runs after the ready item is gone.
				if _, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now()
					WHERE project_id = $1 AND id = $2`, project, ready); err != nil {
					t.Fatal(err)
				}
			}
			// Once in a savepoint to plan (the functions' plans are the
			// session's), then counted.
			sp, err := tx.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c.run(t, sp)
			if err := sp.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			before := itemRowsRead(t, tx)
			c.run(t, tx)
			rows := itemRowsRead(t, tx) - before
			t.Logf("%s read %d rows of items", c.name, rows)
			if rows > 600 {
				t.Errorf("%s read %d rows of items past 1,500 items in backoff that carry the label", c.name, rows)
			}
		})
	}
	t.Run("DueItemIsClaimed", func(t *testing.T) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := tx.QueryRow(ctx, `UPDATE items SET not_before = now() - interval '1 second'
			WHERE id = (SELECT id FROM items WHERE project_id = $1 AND in_backoff ORDER BY seq DESC LIMIT 1)
			RETURNING id`, project).Scan(&due); err != nil {
			t.Fatal(err)
		}
		got, err := claim(tx)
		if err != nil {
			t.Fatal(err)
		}
		if got != due {
			t.Errorf("ClaimItemDirect took %v, want the item whose backoff passed %v (priority 10, before the ready item's 0)", got, due)
		}
		if _, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now()
			WHERE project_id = $1 AND id = $2`, project, ready); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE items SET not_before = now() - interval '1 second'
			WHERE id = (SELECT id FROM items WHERE project_id = $1 AND in_backoff AND active_lease_id IS NULL ORDER BY seq LIMIT 1)`, project); err != nil {
			t.Fatal(err)
		}
		r, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{"x"}, Worker: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Missed {
			t.Errorf("ClaimNeedsTx = %+v, want missed (an item carrying the label is due)", r)
		}
	})
}
