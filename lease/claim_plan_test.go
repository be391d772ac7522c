package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
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

	t.Run("GenericPlanWalksClaimIndex", func(t *testing.T) {
		pool, notices := onePool(t, base)
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
			// A claim without capabilities walks the claim order of the
			// items that require none (migration 00104).
			walked = walked || strings.Contains(n, "Index Scan using items_ready_unrestricted on items c")
		}
		if !walked {
			t.Errorf("no plan of the claim's search walks items_ready_unrestricted; plans:\n%s", strings.Join(notices(), "\n"))
		}
	})

	t.Run("PlannedOnce", func(t *testing.T) {
		pool, _ := onePool(t, base)
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

// onePool is a pool of one connection on base's database whose notices
// (auto_explain's plans) are collected: notices returns all of them so far.
func onePool(t *testing.T, base *pgxpool.Pool) (pool *pgxpool.Pool, notices func() []string) {
	cfg := base.Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	var mu sync.Mutex
	var got []string
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, n.Message)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// explainedPool is a pool of one connection on base's database that runs
// every statement under auto_explain with ANALYZE: plans returns the plans
// run since its last call that read items (nested ones too).
func explainedPool(t *testing.T, base *pgxpool.Pool) (pool *pgxpool.Pool, plans func() []string) {
	t.Helper()
	pool, notices := onePool(t, base)
	for _, s := range []string{
		"LOAD 'auto_explain'",
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_analyze = on",
		"SET auto_explain.log_level = notice",
	} {
		if _, err := pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	seen := 0
	return pool, func() []string {
		all := notices()
		var out []string
		for _, n := range all[seen:] {
			if strings.Contains(n, "on items") {
				out = append(out, n)
			}
		}
		seen = len(all)
		return out
	}
}

// mostDiscarded is the most rows of items one node of plans read and threw
// away, and that node's plan.
func mostDiscarded(plans []string) (most int, where string) {
	for _, p := range plans {
		for _, line := range strings.Split(p, "\n") {
			_, n, ok := strings.Cut(line, "Rows Removed by Filter: ")
			if !ok {
				continue
			}
			var v int
			if _, err := fmt.Sscan(n, &v); err == nil && v > most {
				most, where = v, p
			}
		}
	}
	return most, where
}

// TestClaimByRareLabelReadsTheLabelIndex: a claim for labels that no ready
// item near the head of the claim order carries finds its item through
// items_ready_labels (migration 00096) instead of walking every ready item
// of the project, and so does the probe that runs after a claim found
// nothing (ClaimNeedsTx's missed, wg_claimable); a claim for a label the
// first ready items carry keeps the walk of the claim index. The plans
// each claim ran (auto_explain, with ANALYZE) must not have read and
// thrown away the project's ready items: before 00096 the rare label's
// claim discarded all 3,000 ahead of it, twice.
//
// A database of its own, as TestClaimPlan, whose statistics the test sets.
func TestClaimByRareLabelReadsTheLabelIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.Fresh(t)
	f := setupOn(t, base, base, lease.Config{})
	// 3,000 ready items, every 50th labelled common (the first of them
	// within the 256 that wg_labels_rare looks at), the others without
	// labels, then one labelled rare, last in the claim order.
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, labels)
		SELECT $1, 'plain ' || g, 'test', CASE WHEN g % 50 = 0 THEN '{common}'::text[] ELSE '{}' END
		FROM generate_series(1, 3000) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	var rare string
	if err := base.QueryRow(ctx, `INSERT INTO items (project_id, title, created_by, labels)
		VALUES ($1, 'rare', 'test', '{rare}') RETURNING id::text`, f.project).Scan(&rare); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, "ANALYZE items"); err != nil {
		t.Fatal(err)
	}

	pool, plans := explainedPool(t, base)
	leases := lease.NewService(pool, f.clock, f.cfg)
	const tolerated = 300 // the head probe reads 256; the walk to the common label 49

	got, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{"rare"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.ID.String() != rare {
		t.Errorf("claimed %s (%q), want the rare item %s", got.Item.ID, got.Item.Title, rare)
	}
	ran := plans()
	if most, where := mostDiscarded(ran); most > tolerated {
		t.Errorf("the rare label's claim read and discarded %d ready items:\n%s", most, where)
	}
	if !strings.Contains(strings.Join(ran, "\n"), "items_ready_labels") {
		t.Errorf("no plan of the rare label's claim reads items_ready_labels:\n%s", strings.Join(ran, "\n"))
	}

	for _, label := range []string{"rare", "absent"} {
		if _, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{label}}); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("claim %q: %v, want ErrNothingReady", label, err)
		}
		if most, where := mostDiscarded(plans()); most > tolerated {
			t.Errorf("the claim of %q that found nothing read and discarded %d ready items:\n%s", label, most, where)
		}
	}

	// A batch claim, planned for its labels (db.CustomPlan), reads the
	// index too.
	if _, err := base.Exec(ctx, `INSERT INTO items (project_id, title, created_by, labels)
		SELECT $1, 'rare ' || g, 'test', '{rare}' FROM generate_series(2, 3) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	plans()
	batch, err := leases.ClaimBatch(ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{"rare"}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != 2 {
		t.Errorf("the rare label's batch claim took %d items, want the 2 ready", len(batch))
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the rare label's batch claim read and discarded %d ready items:\n%s", most, where)
	}

	// A label the claim order reaches soon: the walk, as before.
	got, err = leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{"common"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.Title != "plain 50" {
		t.Errorf("claimed %q, want the first item labelled common, plain 50", got.Item.Title)
	}
	ran = plans()
	if most, where := mostDiscarded(ran); most > tolerated {
		t.Errorf("the common label's claim read and discarded %d ready items:\n%s", most, where)
	}
	// (The claim order of the items that require no capability: the claim
	// offers none, migration 00104.)
	if !strings.Contains(strings.Join(ran, "\n"), "Index Scan using items_ready_unrestricted on items c") {
		t.Errorf("the common label's claim does not walk items_ready_unrestricted:\n%s", strings.Join(ran, "\n"))
	}

	// A label that 3,000 ready items carry, all below 280 urgent items
	// without it: past the head, but the walk finds it after those 280,
	// where the index's path would read and sort all 3,000 (wg_labels_rare
	// leaves a label of 2,000 items or more to the walk).
	var bulk uuid.UUID
	if err := base.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('bulk') RETURNING id`).Scan(&bulk); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, priority)
		SELECT $1, 'urgent ' || g, 'test', 5 FROM generate_series(1, 280) AS g`, bulk); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, labels)
		SELECT $1, 'bulk ' || g, 'test', '{bulk}' FROM generate_series(1, 3000) AS g`, bulk); err != nil {
		t.Fatal(err)
	}
	plans()
	got, err = leases.Claim(ctx, bulk, lease.ClaimRequest{Worker: "w1", Labels: []string{"bulk"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.Title != "bulk 1" {
		t.Errorf("claimed %q, want the first item labelled bulk, bulk 1", got.Item.Title)
	}
	ran = plans()
	if strings.Contains(strings.Join(ran, "\n"), "Sort Key: c.priority DESC, c.seq") {
		t.Errorf("the bulk label's claim sorted the items carrying it:\n%s", strings.Join(ran, "\n"))
	}
	if most, where := mostDiscarded(ran); most > tolerated {
		t.Errorf("the bulk label's claim read and discarded %d ready items:\n%s", most, where)
	}
}

// TestClaimWithoutCapabilitiesSkipsRestrictedItems: a worker that offers no
// capabilities can take only items that require none, and finds the first
// of them through items_ready_unrestricted (migration 00104) instead of
// walking past every ready item that requires a capability: a fleet whose
// GPU items wait at the head of the claim order must not make each claim
// of a worker without a GPU read them all. Nor may the probes that run
// after a claim found nothing (ClaimNeedsTx's hopeless and missed,
// ClaimHopeless) or a batch claim. Before 00104 each read and threw away
// the 3,000 restricted items ahead. A worker with the capability still
// walks the claim order and takes the first of them.
//
// A database of its own, as TestClaimPlan, whose statistics the test sets.
func TestClaimWithoutCapabilitiesSkipsRestrictedItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.Fresh(t)
	f := setupOn(t, base, base, lease.Config{})
	// 3,000 urgent ready items that require gpu, then one that requires
	// nothing, last in the claim order.
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, priority, requires)
		SELECT $1, 'gpu ' || g, 'test', 5, '{gpu}' FROM generate_series(1, 3000) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	var plain string
	if err := base.QueryRow(ctx, `INSERT INTO items (project_id, title, created_by)
		VALUES ($1, 'plain', 'test') RETURNING id::text`, f.project).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, "ANALYZE items"); err != nil {
		t.Fatal(err)
	}

	pool, plans := explainedPool(t, base)
	leases := lease.NewService(pool, f.clock, f.cfg)
	const tolerated = 10

	got, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.ID.String() != plain {
		t.Errorf("claimed %s (%q), want the item that requires nothing, %s", got.Item.ID, got.Item.Title, plain)
	}
	ran := plans()
	if most, where := mostDiscarded(ran); most > tolerated {
		t.Errorf("the claim without capabilities read and discarded %d ready items:\n%s", most, where)
	}
	if !strings.Contains(strings.Join(ran, "\n"), "items_ready_unrestricted") {
		t.Errorf("no plan of the claim without capabilities reads items_ready_unrestricted:\n%s", strings.Join(ran, "\n"))
	}

	// Only restricted items are ready now: no_match, found without
	// reading them (the direct claim, its probes, then the transactional
	// path's own search and ClaimHopeless).
	_, err = leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "cpu"})
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("claim with only gpu items ready: %v, want no_match", err)
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the claim that found nothing it could take read and discarded %d ready items:\n%s", most, where)
	}

	// A batch claim without capabilities, planned for its parameters
	// (db.CustomPlan), reads the index too.
	if _, err := base.Exec(ctx, `INSERT INTO items (project_id, title, created_by)
		SELECT $1, 'plain ' || g, 'test' FROM generate_series(2, 3) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	plans()
	batch, err := leases.ClaimBatch(ctx, f.project, lease.ClaimRequest{Worker: "cpu"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != 2 {
		t.Errorf("the batch claim without capabilities took %d items, want the 2 that require nothing", len(batch))
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the batch claim without capabilities read and discarded %d ready items:\n%s", most, where)
	}

	// A worker with the capability takes the first restricted item, by the
	// walk of the claim order.
	got, err = leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "gpu", Capabilities: []string{"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.Title != "gpu 1" {
		t.Errorf("the gpu worker claimed %q, want gpu 1", got.Item.Title)
	}
	if ran := strings.Join(plans(), "\n"); !strings.Contains(ran, "Index Scan using items_claim on items c") {
		t.Errorf("the gpu worker's claim does not walk items_claim:\n%s", ran)
	}
}

// TestClaimWithCapabilitiesSkipsItemsItCannotTake: a worker whose
// capabilities the items at the head of the claim order exceed (a gpu
// worker behind 3,000 tpu items) finds the items it can take through
// items_ready_restricted and items_ready_unrestricted, merged in claim
// order (migration 00113), instead of walking past every tpu item; when
// only items it cannot take are ready, the claim answers no_match without
// reading them either (the direct claim, its probes, the transactional
// path's ClaimHopeless and MissingCapabilities), and a batch claim neither
// (it takes such items by the single claim's statement). Before 00113 each
// of these read and threw away all 3,000. A worker whose capabilities cover
// the head keeps the walk of items_claim.
func TestClaimWithCapabilitiesSkipsItemsItCannotTake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := dbtest.Fresh(t)
	f := setupOn(t, base, base, lease.Config{})
	// 3,000 urgent items that require tpu; after them, in claim order, an
	// item that requires nothing (priority 3), one that requires gpu
	// (priority 2) and one that requires gpu and cuda (priority 1).
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, priority, requires)
		SELECT $1, 'tpu ' || g, 'test', 5, '{tpu}' FROM generate_series(1, 3000) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, priority, requires)
		VALUES ($1, 'plain', 'test', 3, '{}'), ($1, 'gpu', 'test', 2, '{gpu}'),
		       ($1, 'gpu cuda', 'test', 1, '{cuda,gpu}')`, f.project); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Exec(ctx, "ANALYZE items"); err != nil {
		t.Fatal(err)
	}

	pool, plans := explainedPool(t, base)
	leases := lease.NewService(pool, f.clock, f.cfg)
	const tolerated = 70 // the head probe reads 64
	gpu := lease.ClaimRequest{Worker: "gpu", Capabilities: []string{"gpu", "cuda"}}

	// The merge keeps the claim order across what the worker can take: the
	// item that requires nothing, then gpu, then gpu and cuda.
	for _, want := range []string{"plain", "gpu", "gpu cuda"} {
		got, err := leases.Claim(ctx, f.project, gpu)
		if err != nil {
			t.Fatalf("claim for %q: %v", want, err)
		}
		if got.Item.Title != want {
			t.Errorf("the gpu worker claimed %q, want %q", got.Item.Title, want)
		}
		ran := plans()
		if most, where := mostDiscarded(ran); most > tolerated {
			t.Errorf("the claim of %q read and discarded %d ready items:\n%s", want, most, where)
		}
		if want == "gpu" && !strings.Contains(strings.Join(ran, "\n"), "items_ready_restricted") {
			t.Errorf("no plan of the claim of %q reads items_ready_restricted:\n%s", want, strings.Join(ran, "\n"))
		}
	}

	// Only tpu items are ready now: no_match, naming what they require,
	// found without reading them.
	_, err := leases.Claim(ctx, f.project, gpu)
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("claim with only tpu items ready: %v, want no_match", err)
	}
	if missing := fmt.Sprint(we.Details["missing"]); missing != "[tpu]" {
		t.Errorf("no_match names %s missing, want [tpu]", missing)
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the claim that found nothing it could take read and discarded %d ready items:\n%s", most, where)
	}

	// A claim with labels past the head is judged with them: no_match too.
	_, err = leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "gpu", Capabilities: []string{"gpu"}, Labels: []string{"x"}})
	if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("claim for a label with only tpu items ready: %v, want no_match", err)
	}
	if most, where := mostDiscarded(plans()); most > 300 { // wg_labels_rare's head probe reads 256
		t.Errorf("the claim for a label read and discarded %d ready items:\n%s", most, where)
	}

	// A batch claim takes the items it can take past the head the same
	// way (one single claim's statement each), in claim order, and then
	// answers no_match without reading the tpu items either.
	if _, err := base.Exec(ctx, `
		INSERT INTO items (project_id, title, created_by, priority, requires)
		VALUES ($1, 'gpu a', 'test', 2, '{gpu}'), ($1, 'gpu b', 'test', 1, '{gpu}'), ($1, 'plain b', 'test', 0, '{}')`,
		f.project); err != nil {
		t.Fatal(err)
	}
	plans()
	batch, err := leases.ClaimBatch(ctx, f.project, gpu, 10)
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, c := range batch {
		titles = append(titles, c.Item.Title)
	}
	if got := strings.Join(titles, ", "); got != "gpu a, gpu b, plain b" {
		t.Errorf("the gpu worker's batch claim took %s, want gpu a, gpu b, plain b", got)
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the batch claim read and discarded %d ready items:\n%s", most, where)
	}
	if _, err = leases.ClaimBatch(ctx, f.project, gpu, 10); !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("batch claim with only tpu items ready: %v, want no_match", err)
	}
	if most, where := mostDiscarded(plans()); most > tolerated {
		t.Errorf("the batch claim that found nothing it could take read and discarded %d ready items:\n%s", most, where)
	}

	// A worker whose capabilities cover the head walks items_claim and
	// takes the first tpu item.
	got, err := leases.Claim(ctx, f.project, lease.ClaimRequest{Worker: "tpu", Capabilities: []string{"tpu", "gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.Title != "tpu 1" {
		t.Errorf("the tpu worker claimed %q, want tpu 1", got.Item.Title)
	}
	if ran := strings.Join(plans(), "\n"); !strings.Contains(ran, "Index Scan using items_claim on items c") {
		t.Errorf("the tpu worker's claim does not walk items_claim:\n%s", ran)
	}
}
