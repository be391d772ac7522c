package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

// CustomPlan runs q's statements as unnamed statements whose description
// pgx caches (pgx.QueryExecModeCacheDescribe, still one round trip), so
// that PostgreSQL plans each execution with its parameters. A statement
// prepared once per connection (the pool's default) switches to a generic
// plan after five executions when that plan's estimate looks no worse; for
// the claim, whose best plan depends on its parameters (the labels, the
// project's size), the generic plan scanned and sorted the project's ready
// items on every call: measured at about a quarter of the custom plan's
// throughput (docs/benchmarks-record.md, "The claim's plan"). The one-statement
// claim (ClaimItemDirect) does not need it: its search is a function with a
// plan of its own (wg_claim_candidate, migration 00046).
func CustomPlan(q dbq.DBTX) dbq.DBTX { return customPlan{q} }

type customPlan struct{ q dbq.DBTX }

func (c customPlan) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.q.Exec(ctx, sql, withCustomPlan(args)...)
}

func (c customPlan) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.q.Query(ctx, sql, withCustomPlan(args)...)
}

func (c customPlan) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return c.q.QueryRow(ctx, sql, withCustomPlan(args)...)
}

func withCustomPlan(args []any) []any {
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}
