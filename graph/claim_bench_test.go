package graph

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// claimCandidate is the lookup the claim starts with: the best ready item
// not in a retry backoff (the predicate of items_claim, migration 00141),
// skipping rows other claimers hold.
const claimCandidate = `SELECT id FROM items WHERE project_id = $1 AND ready AND NOT in_backoff
ORDER BY priority DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED`

// BenchmarkClaimCandidate times the ready-item lookup in a project of
// 1,000 / 100,000 (and, with WORKGRAPH_BENCH_LARGE=1, 1,000,000) items of
// which 70% are done, 30% blocked and 100 ready. The time should not grow
// with the project: the lookup reads the partial index items_claim.
func BenchmarkClaimCandidate(b *testing.B) {
	sizes := []int{1_000, 100_000}
	if os.Getenv("WORKGRAPH_BENCH_LARGE") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			ctx := context.Background()
			pool := dbtest.New(b)
			var project uuid.UUID
			if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('bench') RETURNING id`).Scan(&project); err != nil {
				b.Fatal(err)
			}
			// Every n/100th item is ready (100 in all), 70% of the rest
			// done, the others blocked by a dependency.
			_, err := pool.Exec(ctx, `
				INSERT INTO items (project_id, title, priority, status, finished_at, unmet_dependencies, created_by)
				SELECT $1, 'item ' || g, ((g::bigint * 7919) % 10)::integer,
				       CASE WHEN g % ($2 / 100) = 0 THEN 'open' WHEN g % 10 < 7 THEN 'done' ELSE 'open' END,
				       CASE WHEN g % ($2 / 100) = 0 THEN NULL WHEN g % 10 < 7 THEN now() END,
				       CASE WHEN g % ($2 / 100) = 0 OR g % 10 < 7 THEN 0 ELSE 1 END,
				       'bench'
				FROM generate_series(1, $2::integer) AS g`, project, n)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `VACUUM ANALYZE items`); err != nil {
				b.Fatal(err)
			}
			var ready int
			pool.QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND ready`, project).Scan(&ready)
			plan := explain(b, pool, project)
			if !strings.Contains(plan, "items_claim") {
				b.Fatalf("the lookup does not use items_claim:\n%s", plan)
			}
			b.Logf("%d items, %d ready; plan:\n%s", n, ready, plan)
			b.ResetTimer()
			for b.Loop() {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				var id uuid.UUID
				if err := tx.QueryRow(ctx, claimCandidate, project).Scan(&id); err != nil {
					b.Fatal(err)
				}
				tx.Rollback(ctx)
			}
		})
	}
}

func explain(b *testing.B, pool *pgxpool.Pool, project uuid.UUID) string {
	b.Helper()
	rows, err := pool.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS) "+claimCandidate, project)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		rows.Scan(&l)
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}
