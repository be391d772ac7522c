package graph

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// rowVersions maps each item of the project to its row version (xmin): any
// UPDATE of a row gives it a new xmin.
func (f fixture) rowVersions(t *testing.T) map[uuid.UUID]string {
	t.Helper()
	rows, err := f.conn.Query(context.Background(), `SELECT id, xmin::text FROM items WHERE project_id = $1`, f.project)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var (
			id uuid.UUID
			x  string
		)
		if err := rows.Scan(&id, &x); err != nil {
			t.Fatal(err)
		}
		out[id] = x
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func changedRows(before, after map[uuid.UUID]string) map[uuid.UUID]bool {
	out := map[uuid.UUID]bool{}
	for id, x := range after {
		if before[id] != x {
			out[id] = true
		}
	}
	return out
}

// TestIncrementalRecompute: finishing one item of a 10,000-item graph
// rewrites only its own row, its dependents' and its parent's.
func TestIncrementalRecompute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Its own database: an import this large ANALYZEs the tables,
	// which in a test transaction would hold their statistics locked
	// against every other large import until the test ends.
	f := setupDB(t)
	res, err := f.svc.ImportPlan(ctx, f.project, bigPlan(1000, 9), "p", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 10000 {
		t.Fatalf("%d items", len(res.Items))
	}
	task, next, epic := res.Keys["e500.0"], res.Keys["e500.1"], res.Keys["e500"]

	before := f.rowVersions(t)
	f.mustFinish(t, task, StatusDone)
	changed := changedRows(before, f.rowVersions(t))
	want := map[uuid.UUID]bool{task: true, next: true, epic: true}
	if len(changed) != len(want) {
		t.Fatalf("%d rows changed, want %d (the item, its dependent, its parent)", len(changed), len(want))
	}
	for id := range want {
		if !changed[id] {
			t.Fatalf("row %s did not change", id)
		}
	}
	wantState(t, f.mustGet(t, next), StateReady)
	if c := f.counters(t, epic); c.Children != 8 {
		t.Fatalf("epic open_children %d, want 8", c.Children)
	}

	// The plan's last kid of every epic gates the epic; cancelling a whole
	// epic subtree touches the subtree, the next epic and nothing else.
	before = f.rowVersions(t)
	if _, err := f.svc.Cancel(ctx, f.project, epic, "alice", "scope cut"); err != nil {
		t.Fatal(err)
	}
	changed = changedRows(before, f.rowVersions(t))
	if len(changed) != 8+1+1 { // 8 open kids, the epic, the next epic
		t.Fatalf("%d rows changed by the cancel, want 10", len(changed))
	}
	if !changed[res.Keys["e501"]] {
		t.Fatal("the next epic was not released")
	}
	f.checkCounters(t)
}
