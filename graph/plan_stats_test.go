package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestImportPlanAnalyzesBeforeEdges: an import with many edges refreshes
// the statistics of items before it inserts the edges, so the foreign-key
// check of each edge finds its item by the primary key, not by a scan of
// the project's items (quadratic on a table never analyzed: a new
// deployment's first large import). The plan is too small (300 items) for
// the ANALYZE an import runs after committing, so the statistics seen
// afterwards are the ones taken inside the import.
//
// Its own database: the ANALYZE holds the statistics' lock until the
// import commits, and the shared test database's items hold other tests'
// rows (and locks).
func TestImportPlanAnalyzesBeforeEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupDB(t)
	// Each step waits for the four before it: 1,190 dependencies, and
	// items enough that a scan of them costs more than an index lookup.
	const n = 300
	plan := make([]PlanItem, n)
	for i := range plan {
		plan[i] = PlanItem{Key: fmt.Sprintf("k%d", i), Title: fmt.Sprintf("step %d", i)}
		for j := max(0, i-4); j < i; j++ {
			plan[i].DependsOn = append(plan[i].DependsOn, fmt.Sprintf("k%d", j))
		}
	}
	if _, err := f.svc.ImportPlan(ctx, f.project, plan, "p", false); err != nil {
		t.Fatal(err)
	}
	var tuples float64
	if err := f.conn.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'items'::regclass`).Scan(&tuples); err != nil {
		t.Fatal(err)
	}
	if tuples != n {
		t.Errorf("items has %v rows in its statistics, want the %d imported", tuples, n)
	}
	// The plan the edges' checks get: the foreign-key check's query, as
	// a generic plan (what a prepared check settles on).
	tx, err := f.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	// PREPARE outlives the transaction: DEALLOCATE below.
	if _, err := tx.Exec(ctx, `PREPARE fk_check(uuid, uuid) AS
		SELECT 1 FROM ONLY items x WHERE project_id = $1 AND id = $2 FOR KEY SHARE OF x`); err != nil {
		t.Fatal(err)
	}
	// EXPLAIN takes no bind parameters: the ids as literals.
	rows, err := tx.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE fk_check('%s', '%s')", f.project, f.project))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DEALLOCATE fk_check"); err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(lines, "\n"); !strings.Contains(text, "items_pkey") {
		t.Errorf("the foreign-key check does not find the item by its primary key:\n%s", text)
	}
}
