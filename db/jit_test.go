package db_test

import (
	"context"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestSortlessFunctionsCompileNothing: every function of the schema that
// plans its queries with enable_sort = off also runs them with jit = off.
// Under enable_sort = off a plan that must sort carries the planner's
// penalty for a disabled step (about 10^10), far past jit_above_cost
// (100,000 by default), so PostgreSQL compiles the query to machine code
// at every execution: a claim whose search sorted once took 1.7 to 6.7 s
// instead of a few milliseconds. A function redefined by a later migration
// (CREATE OR REPLACE) keeps only the SET clauses it names, so each
// redefinition must name jit = off again; this test says which do not.
func TestSortlessFunctionsCompileNothing(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	rows, err := tx.Query(ctx, `
		SELECT p.oid::regprocedure::text,
		       'jit=off' = ANY (p.proconfig)
		FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace
		  AND 'enable_sort=off' = ANY (p.proconfig)
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		var jitOff bool
		if err := rows.Scan(&name, &jitOff); err != nil {
			t.Fatal(err)
		}
		n++
		if !jitOff {
			t.Errorf("%s sets enable_sort = off without jit = off", name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no function sets enable_sort = off: the query above finds none (schema or proconfig spelling changed?)")
	}
}
