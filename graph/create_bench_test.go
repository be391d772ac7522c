package graph

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// BenchmarkCreateChild times CreateItem with a parent: under no budget
// (the depth check reads the parent's budget_roots only) and under a
// budget with a depth limit two levels up (the check walks up to it).
func BenchmarkCreateChild(b *testing.B) {
	for _, budgeted := range []bool{false, true} {
		name := "budget=none"
		if budgeted {
			name = "budget=depth"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			pool := dbtest.New(b)
			svc := NewService(pool, nil)
			p, err := svc.CreateProject(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			root, err := svc.CreateItem(ctx, p.ID, NewItem{Title: "root", CreatedBy: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			mid, err := svc.CreateItem(ctx, p.ID, NewItem{Title: "mid", ParentID: &root.ID, CreatedBy: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if budgeted {
				if _, err := pool.Exec(ctx, `INSERT INTO budgets (project_id, item_id, max_depth, started_at, updated_at)
					VALUES ($1, $2, 5, now(), now())`, p.ID, root.ID); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `UPDATE items SET budget_roots = ARRAY[$2::uuid] WHERE project_id = $1`, p.ID, root.ID); err != nil {
					b.Fatal(err)
				}
			}
			var parent uuid.UUID = mid.ID
			b.ResetTimer()
			for b.Loop() {
				if _, err := svc.CreateItem(ctx, p.ID, NewItem{Title: "child", ParentID: &parent, CreatedBy: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
