package lease_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestClaimPlan holds the one-statement claim's plan (ClaimItemDirect and
// its search, wg_claim_candidate, migration 00046): the statement keeps one
// plan per session instead of being planned at every claim, and that plan
// walks the claim index in order even where the planner's estimates for an
// unknown project are those of a small one.
//
// A new database of its own (dbtest.Fresh, not a reused one, whose indexes
// keep the pages of earlier tests' rows and so weigh differently in the
// plan): the test analyzes items after loading many small projects and a
// large one, so that the generic estimates are the hazard's, and each pool
// has one connection, whose session settings and prepared statements the
// test reads.
func TestClaimPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.Fresh(t)
	f := setupOn(t, base, base, lease.Config{})
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by)
		SELECT $1, 'large ' || g, 'test' FROM generate_series(1, 3000) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, `
		WITH small AS (
		    INSERT INTO projects (name) SELECT 'small-' || g FROM generate_series(1, 400) AS g RETURNING id)
		INSERT INTO items (project_id, title, created_by) SELECT small.id, 'small', 'test' FROM small`); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, "ANALYZE items"); err != nil {
		t.Fatal(err)
	}
	var first string
	if err := base.QueryRow(ctx, `SELECT id::text FROM items WHERE project_id = $1 AND ready
		ORDER BY priority DESC, seq LIMIT 1`, f.project).Scan(&first); err != nil {
		t.Fatal(err)
	}

	// onePool is a pool of one connection on the test's database whose
	// notices (auto_explain's plans) are collected.
	onePool := func(t *testing.T) (*pgxpool.Pool, func() []string) {
		cfg := base.Config()
		cfg.MaxConns, cfg.MinConns = 1, 0
		var mu sync.Mutex
		var notices []string
		cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, n.Message)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), notices...)
		}
	}

	t.Run("GenericPlanWalksClaimIndex", func(t *testing.T) {
		pool, notices := onePool(t)
		// The generic plan from the first call, and every plan the session
		// runs (nested ones too) sent back as a notice.
		for _, s := range []string{
			"SET plan_cache_mode = force_generic_plan",
			"LOAD 'auto_explain'",
			"SET auto_explain.log_min_duration = 0",
			"SET auto_explain.log_nested_statements = on",
			"SET auto_explain.log_level = notice",
		} {
			if _, err := pool.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		leases := lease.NewService(pool, f.clock, f.cfg)
		got, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Item.ID.String() != first {
			t.Errorf("claimed %s, want the first ready item %s", got.Item.ID, first)
		}
		var walked bool
		for _, n := range notices() {
			if !strings.Contains(n, "FROM items c") {
				continue // another statement's plan
			}
			if strings.Contains(n, "Sort Key: c.priority") {
				t.Errorf("the claim's search sorts the project's ready items:\n%s", n)
			}
			walked = walked || strings.Contains(n, "Index Scan using items_claim on items c")
		}
		if !walked {
			t.Errorf("no plan of the claim's search walks items_claim; plans:\n%s", strings.Join(notices(), "\n"))
		}
	})

	t.Run("PlannedOnce", func(t *testing.T) {
		pool, _ := onePool(t)
		leases := lease.NewService(pool, f.clock, f.cfg)
		const claims = 12
		for i := 0; i < claims; i++ {
			if _, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "w1"}); err != nil {
				t.Fatal(err)
			}
		}
		var generic, custom int64
		err := pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE '-- name: ClaimItemDirect %'`).Scan(&generic, &custom)
		if err != nil {
			t.Fatal(err)
		}
		// PostgreSQL builds custom plans for a prepared statement's first
		// five executions, then keeps the generic one when it costs no more.
		if generic+custom != claims || custom > 5 {
			t.Errorf("ClaimItemDirect on one session: %d generic and %d custom plans over %d claims, want at most 5 custom",
				generic, custom, claims)
		}
	})
}
