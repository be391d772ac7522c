// Command scopeheld measures the claim statements of a project whose ready
// items wait behind a live lease's write scopes (ADR 0007, "Addendum:
// claims past held write scopes"): -held ready items of priority 10 share
// 32 wildcard scopes, which a live lease of another item holds, and one
// item without touches is ready at priority 0.
//
// Each statement runs -n times under EXPLAIN (ANALYZE, TIMING OFF) in a
// transaction rolled back; the first run is left out and the median
// execution time (triggers included) is printed, with the rows of items
// the last run read (the transaction's pg_stat counters):
//   - ClaimItemDirect, ClaimItems (10) and ClaimNeedsTx (after the ready
//     item is gone): the claim past the held items;
//   - EndLease of the holder's lease, then ClaimItemDirect taking the
//     holder again in the same transaction: what the end and the grant of
//     the scopes cost (with 00167 they clear and mark the held items).
//
// It uses only db/dbq calls that main had before 00167, so the same file
// runs against both schemas (copy it into a checkout of the other).
//
// Usage: go run ./bench/experiments/scopeheld -database-url URL [-held 300] [-n 41]
// The database must be migrated; the program adds a project to it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

type lastQuery struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (l *lastQuery) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql, l.args = d.SQL, d.Args
	return ctx
}

func (l *lastQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func main() {
	url := flag.String("database-url", "", "PostgreSQL URL of a migrated database")
	held := flag.Int("held", 300, "ready items behind the live lease's scopes")
	n := flag.Int("n", 41, "runs of each statement (the first is left out)")
	flag.Parse()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(*url)
	if err != nil {
		log.Fatal(err)
	}
	trace := &lastQuery{}
	cfg.Tracer = trace
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)

	var project uuid.UUID
	must(conn.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('scopeheld-' || md5(random()::text)) RETURNING id`).Scan(&project))
	scopes := make([]string, 32)
	for k := range scopes {
		scopes[k] = fmt.Sprintf("repo:module%02d/**", k)
	}
	_, err = conn.Exec(ctx, `INSERT INTO items (project_id, title, priority, created_by, touches)
		VALUES ($1, 'holder', 20, 'bench', $2)`, project, scopes)
	must(err)
	_, err = conn.Exec(ctx, `INSERT INTO items (project_id, title, priority, created_by, touches)
		SELECT $1, 'held ' || g, 10, 'bench', $2 FROM generate_series(1, $3::int) g`, project, scopes, *held)
	must(err)
	var ready uuid.UUID
	must(conn.QueryRow(ctx, `INSERT INTO items (project_id, title, priority, created_by)
		VALUES ($1, 'ready', 0, 'bench') RETURNING id`, project).Scan(&ready))
	q := dbq.New()
	holder, err := q.ClaimItemDirect(ctx, conn, dbq.ClaimItemDirectParams{
		ProjectID: project, Labels: []string{}, Worker: "holder", LeaseID: uuid.New(), Principal: "agent:holder", TtlMs: 3_600_000,
	})
	must(err)
	_, err = conn.Exec(ctx, `VACUUM ANALYZE items`)
	must(err)

	claimDirect := func(tx pgx.Tx) error {
		_, err := q.ClaimItemDirect(ctx, tx, dbq.ClaimItemDirectParams{
			ProjectID: project, Labels: []string{}, Worker: "w", LeaseID: uuid.New(), Principal: "agent:w", TtlMs: 60000,
		})
		return err
	}
	released := "released"
	endHolder := func(tx pgx.Tx) error {
		_, err := q.EndLease(ctx, tx, dbq.EndLeaseParams{
			Outcome: &released, ProjectID: project, LeaseID: holder.Lease.ID, Epoch: holder.Lease.Epoch,
		})
		return err
	}
	finishReady := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE items SET status = 'done', finished_at = now() WHERE project_id = $1 AND id = $2`, project, ready)
		return err
	}
	type step struct {
		name   string
		before []func(pgx.Tx) error // run for real first, in the measured transaction
		run    func(pgx.Tx) error
	}
	steps := []step{
		{name: "ClaimItemDirect past the held items", run: claimDirect},
		{name: "ClaimItems (10)", run: func(tx pgx.Tx) error {
			_, err := q.ClaimItems(ctx, tx, dbq.ClaimItemsParams{
				ProjectID: project, Labels: []string{}, Worker: "w", Guarded: true, MaxItems: 10, Principal: "agent:w", TtlMs: 60000,
			})
			return err
		}},
		{name: "ClaimNeedsTx (ready item gone)", before: []func(pgx.Tx) error{finishReady}, run: func(tx pgx.Tx) error {
			_, err := q.ClaimNeedsTx(ctx, tx, dbq.ClaimNeedsTxParams{ProjectID: project, Labels: []string{}, Worker: "w"})
			return err
		}},
		{name: "EndLease of the holder", run: endHolder},
		{name: "ClaimItemDirect granting the holder again", before: []func(pgx.Tx) error{endHolder}, run: claimDirect},
	}
	for _, s := range steps {
		var times []float64
		var rows int64
		for i := 0; i < *n; i++ {
			tx, err := conn.Begin(ctx)
			must(err)
			for _, b := range s.before {
				must(b(tx))
			}
			sp, err := tx.Begin(ctx)
			must(err)
			must(s.run(sp))
			trace.mu.Lock()
			sql, args := trace.sql, trace.args
			trace.mu.Unlock()
			must(sp.Rollback(ctx))
			r0 := rowsRead(ctx, tx)
			ms := explain(ctx, tx, sql, args)
			rows = rowsRead(ctx, tx) - r0
			must(tx.Rollback(ctx))
			if i > 0 {
				times = append(times, ms)
			}
		}
		sort.Float64s(times)
		fmt.Printf("%-45s median %7.3f ms  (min %.3f, max %.3f)  rows of items read %d\n",
			s.name, times[len(times)/2], times[0], times[len(times)-1], rows)
	}
}

func explain(ctx context.Context, tx pgx.Tx, sql string, args []any) float64 {
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) "+sql, args...)
	must(err)
	plans, err := pgx.CollectRows(rows, pgx.RowTo[[]map[string]any])
	must(err)
	return plans[0][0]["Execution Time"].(float64)
}

func rowsRead(ctx context.Context, tx pgx.Tx) int64 {
	var n int64
	must(tx.QueryRow(ctx, `
		SELECT pg_stat_get_xact_tuples_returned('items'::regclass)
		       + pg_stat_get_xact_tuples_fetched('items'::regclass)
		       + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(x.indexrelid)), 0)::bigint
		          FROM pg_index x WHERE x.indrelid = 'items'::regclass)`).Scan(&n))
	return n
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
