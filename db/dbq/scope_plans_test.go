package dbq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestClaimsDoNotReadItemsBehindHeldScopes: 300 ready items of priority
// 10 share 32 wildcard write scopes, which a live lease of another item
// holds, and one item without touches is ready at priority 0. The claim
// as the REST route runs it (ClaimItemDirect), the transactional claim
// (ClaimItem), a batch claim (ClaimItems) and the probe after a claim that
// found nothing (ClaimNeedsTx) each read at most 100 rows of items: they
// walked the 300 in claim order and threw each away for its overlap with
// the live lease (wg_scope_holder), 300 rows and more each (migration
// 00167 marks them scope_held when the lease is granted). The probe still
// counts the held items as ready (not hopeless: they are claimable once
// the lease ends).
func TestClaimsDoNotReadItemsBehindHeldScopes(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('held-scopes') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	scopes := make([]string, 32)
	for k := range scopes {
		scopes[k] = fmt.Sprintf("repo:module%02d/**", k)
	}
	// The holder comes first in claim order, so the first claim takes it.
	var holder uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by, touches)
		VALUES ($1, 'holder', 20, 'test', $2) RETURNING id`, project, scopes).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO items (project_id, title, priority, created_by, touches)
		SELECT $1, 'held ' || g, 10, 'test', $2 FROM generate_series(1, 300) g`, project, scopes); err != nil {
		t.Fatal(err)
	}
	var ready uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by)
		VALUES ($1, 'ready', 0, 'test') RETURNING id`, project).Scan(&ready); err != nil {
		t.Fatal(err)
	}
	q := dbq.New()
	// An hour's TTL: the lease stays live however loaded the machine.
	r, err := q.ClaimItemDirect(ctx, pool, dbq.ClaimItemDirectParams{
		ProjectID: project, Labels: []string{}, Worker: "holder", LeaseID: uuid.New(), Principal: "agent:holder", TtlMs: 3_600_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Item.ID != holder {
		t.Fatalf("the first claim took %v, want the holder %v", r.Item.ID, holder)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE items`); err != nil {
		t.Fatal(err)
	}

	conn, trace := tracedConn(t, pool)
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
			// held items keep the claim from being hopeless.
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
				if _, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now()
					WHERE project_id = $1 AND id = $2`, project, ready); err != nil {
					t.Fatal(err)
				}
			}
			before := itemRowsRead(t, tx)
			pages := explainPages(t, tx, sql, args)
			rows := itemRowsRead(t, tx) - before
			t.Logf("%s read %d rows of items, %v pages", name, rows, pages)
			if rows > 100 {
				t.Errorf("%s read %d rows of items past 300 items behind a held scope", name, rows)
			}
		})
	}
}
