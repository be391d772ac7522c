package graph

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestLabelListsReadTheLabelledItemsIndex: the labels index holds the items
// that carry labels only (migration 00168: it held every item, and every
// claim and completion of an item without labels wrote to it), and a list
// filtered by a label still reads it, in every order and state filter: a
// project of 20,000 items without labels and 5 with the label, each list
// reads a few dozen pages at most, where a walk of the project's items
// reads hundreds.
//
// Its own database (dbtest.Fresh): the bound counts pages, which a reused
// database's grown indexes would change.
func TestLabelListsReadTheLabelledItemsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Fresh(t)
	var pred string
	if err := pool.QueryRow(ctx, `SELECT coalesce(pg_get_expr(indpred, indrelid), '') FROM pg_index
		WHERE indexrelid = 'items_labels'::regclass`).Scan(&pred); err != nil {
		t.Fatal(err)
	}
	if pred != `(labels <> '{}'::text[])` {
		t.Errorf("items_labels holds the items where %q, want those that carry labels only", pred)
	}

	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('labels') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO items (project_id, title, status, finished_at, created_by)
		 SELECT $1, 'done ' || g, 'done', now(), 'test' FROM generate_series(1, 10000) g`,
		`INSERT INTO items (project_id, title, created_by) SELECT $1, 'open ' || g, 'test' FROM generate_series(1, 10000) g`,
		`INSERT INTO items (project_id, title, created_by, labels) SELECT $1, 'labelled ' || g, 'test', '{rare}' FROM generate_series(1, 3) g`,
		`INSERT INTO items (project_id, title, status, finished_at, created_by, labels)
		 SELECT $1, 'labelled done ' || g, 'done', now(), 'test', '{rare}' FROM generate_series(1, 2) g`,
	} {
		if _, err := pool.Exec(ctx, stmt, project); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	traced, trace := tracedPool(t, pool)
	svc := NewService(traced, clock.NewStub(t0))
	for _, tc := range []struct {
		name   string
		filter ListFilter
		want   int
	}{
		{"every state", ListFilter{}, 5},
		{"ready", ListFilter{States: []State{StateReady}}, 3},
		{"done", ListFilter{States: []State{StateDone}}, 2},
	} {
		for _, order := range ItemOrders {
			f := tc.filter
			f.Label, f.Order, f.Limit = "rare", order, 25
			trace.take()
			got, err := svc.ListItems(ctx, project, f)
			if err != nil {
				t.Fatalf("%s by %s: %v", tc.name, order, err)
			}
			if len(got.Items) != tc.want {
				t.Fatalf("%s by %s: %d items, want %d", tc.name, order, len(got.Items), tc.want)
			}
			lists := 0
			for _, s := range trace.take() {
				if !isItemList(s.sql) {
					continue
				}
				lists++
				if pages := pagesRead(t, pool, s); pages > 40 {
					t.Errorf("%s by %s, label rare: the list read %v pages", tc.name, order, pages)
				}
			}
			// (A list of every state in an order of priority or change
			// reads the open items, then the finished ones.)
			if lists == 0 {
				t.Fatalf("%s by %s: no item list traced", tc.name, order)
			}
		}
	}
}
