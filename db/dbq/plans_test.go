package dbq_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// lastQuery remembers the SQL and arguments of the last statement a
// connection ran.
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

func (l *lastQuery) last() (string, []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sql, l.args
}

func (l *lastQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// freshForPlans: the tests of plans take a new database (dbtest.Fresh),
// not a reused one. Their bounds count the pages a statement reads and
// the plans the planner picks from the sizes of tables and indexes on
// disk, and a reused database's indexes keep the pages that earlier
// tests' rows grew (reset deletes rows; it does not rebuild indexes).
// TestGraphJoinsDoNotTrustStaleProjectStatistics also alters the tables'
// options.

// TestLookupsByBareIDUseAnIndex: the statements that find a row by its id
// alone, without its project (routes such as /v1/leases/{id}), read a few
// index and heap pages, not the whole table: with 10,000 leases and
// attention requests in 50 projects, each lookup runs and then runs again
// under EXPLAIN (ANALYZE, BUFFERS), which must count at most 8 pages
// (reading the table or its primary key takes well over 50).
func TestLookupsByBareIDUseAnIndex(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	fill := []string{
		`INSERT INTO projects (name) SELECT 'p' || g FROM generate_series(1, 50) g`,
		`INSERT INTO items (project_id, title, created_by)
		 SELECT p.id, 'item', 'test' FROM projects p, generate_series(1, 200)`,
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		 SELECT project_id, id, 1, 'w', 'w', now(), now() + interval '1 hour' FROM items`,
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at)
		 SELECT project_id, id, 'person', 'p', 'q', now() FROM items`,
		`INSERT INTO tokens (project_id, name, role, secret_hash)
		 SELECT id, 'agent', 'agent', sha256(name::bytea) FROM projects`,
		`ANALYZE`,
	}
	for _, stmt := range fill {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	id := func(table string) uuid.UUID {
		var id uuid.UUID
		if err := pool.QueryRow(ctx, "SELECT id FROM "+table+" ORDER BY random() LIMIT 1").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	conn, trace := tracedConn(t, pool)
	q := dbq.New()
	cases := map[string]func() error{
		"LeaseHolder": func() error { _, err := q.LeaseHolder(ctx, conn, id("leases")); return err },
		"AttentionProject": func() error {
			_, err := q.AttentionProject(ctx, conn, id("attention_requests"))
			return err
		},
		"GetToken":   func() error { _, err := q.GetToken(ctx, conn, id("tokens")); return err },
		"GetProject": func() error { _, err := q.GetProject(ctx, conn, id("projects")); return err },
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			if err := run(); err != nil {
				t.Fatalf("lookup: %v", err)
			}
			sql, args := trace.last()
			if pages := explainPages(t, conn, sql, args); pages > 8 {
				t.Errorf("%s reads %v pages", name, pages)
			}
		})
	}
}

// TestGraphJoinsDoNotTrustStaleProjectStatistics: a project that grew after
// the tables were last analyzed looks tiny to the planner. The statements
// that go from dependencies to items (on the completion path and the item
// view) must still read the items they need through the primary key, not
// walk every item of that project: with 20,000 items analyzed in other
// projects and a 10,000-item chain added since, each reads at most 100
// pages (the walk reads tens of thousands).
func TestGraphJoinsDoNotTrustStaleProjectStatistics(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`ALTER TABLE items SET (autovacuum_enabled = false)`,
		`ALTER TABLE dependencies SET (autovacuum_enabled = false)`,
		`ALTER TABLE attention_requests SET (autovacuum_enabled = false)`,
		`INSERT INTO projects (name) SELECT 'old' || g FROM generate_series(1, 20) g`,
		`INSERT INTO items (project_id, title, created_by, status, finished_at)
		 SELECT p.id, 'done', 'test', 'done', now() FROM projects p, generate_series(1, 1000)`,
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at)
		 SELECT project_id, id, 'person', 'p', 'q', now() FROM items`,
		`ANALYZE items, dependencies, attention_requests`,
		`INSERT INTO projects (name) VALUES ('new')`,
		`INSERT INTO items (project_id, title, created_by, unmet_dependencies)
		 SELECT p.id, 'item ' || g, 'test', CASE WHEN g > 1 THEN 1 ELSE 0 END
		 FROM projects p, generate_series(1, 10000) g WHERE p.name = 'new'`,
		`INSERT INTO dependencies (project_id, item_id, depends_on_id, created_by)
		 SELECT a.project_id, b.id, a.id, 'test'
		 FROM items a JOIN items b ON b.project_id = a.project_id AND b.seq = a.seq + 1
		 WHERE a.project_id = (SELECT id FROM projects WHERE name = 'new')`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project, mid, early, leaseID uuid.UUID
	err := pool.QueryRow(ctx, `SELECT project_id, id FROM items
		WHERE project_id = (SELECT id FROM projects WHERE name = 'new')
		ORDER BY seq OFFSET 5000 LIMIT 1`).Scan(&project, &mid)
	if err != nil {
		t.Fatal(err)
	}
	// The fourth item of the chain: three open prerequisites.
	err = pool.QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 ORDER BY seq OFFSET 3 LIMIT 1`, project).Scan(&early)
	if err != nil {
		t.Fatal(err)
	}
	// A lease of the middle item with one answered question, and an open
	// hold of the last item.
	err = pool.QueryRow(ctx, `INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		VALUES ($1, $2, 1, 'w', 'w', now(), now() + interval '1 hour') RETURNING id`, project, mid).Scan(&leaseID)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, requested_by, question,
		     blocking, state, answer, resolved_by, resolved_at, created_at)
		 VALUES ($1, $2, $3, 1, 'worker', 'w', 'which?', false, 'resolved', 'this', 'p', now(), now())`,
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at)
		 SELECT $1, id, 'person', 'p', 'hold', now() FROM items
		 WHERE project_id = $1 AND $2::uuid IS NOT NULL AND $3::uuid IS NOT NULL ORDER BY seq DESC LIMIT 1`,
	} {
		if _, err := pool.Exec(ctx, stmt, project, mid, leaseID); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	conn, trace := tracedConn(t, pool)
	q := dbq.New()
	ids := []uuid.UUID{mid}
	open := "open"
	// Each case runs the statement and says how many rows it found or
	// changed; want is the right number.
	cases := []struct {
		name string
		want int
		run  func(tx pgx.Tx) (int, error)
	}{
		{"ReleaseDependents", 1, func(tx pgx.Tx) (int, error) {
			n, err := q.ReleaseDependents(ctx, tx, dbq.ReleaseDependentsParams{ProjectID: project, Ids: ids})
			return int(n), err
		}},
		{"PrerequisiteRefs", 1, func(tx pgx.Tx) (int, error) {
			return count(q.PrerequisiteRefs(ctx, tx, dbq.PrerequisiteRefsParams{ProjectID: project, Ids: ids}))
		}},
		{"DependentRefs", 1, func(tx pgx.Tx) (int, error) {
			return count(q.DependentRefs(ctx, tx, dbq.DependentRefsParams{ProjectID: project, ID: mid}))
		}},
		{"ClosedNonBlockingForLease", 1, func(tx pgx.Tx) (int, error) {
			return count(q.ClosedNonBlockingForLease(ctx, tx, dbq.ClosedNonBlockingForLeaseParams{ProjectID: project, LeaseID: &leaseID, MaxRows: 21}))
		}},
		{"ListAttention", 1, func(tx pgx.Tx) (int, error) {
			return count(q.ListAttention(ctx, tx, dbq.ListAttentionParams{ProjectID: project, State: &open, MaxRows: 50}))
		}},
		{"OpenPrerequisiteEdges", 4, func(tx pgx.Tx) (int, error) {
			return count(q.OpenPrerequisiteEdges(ctx, tx, dbq.OpenPrerequisiteEdgesParams{ProjectID: project, ID: early}))
		}},
		{"OpenDescendants", 0, func(tx pgx.Tx) (int, error) {
			return count(q.OpenDescendants(ctx, tx, dbq.OpenDescendantsParams{ProjectID: project, ID: mid}))
		}},
		{"AncestorRefs", 0, func(tx pgx.Tx) (int, error) {
			return count(q.AncestorRefs(ctx, tx, dbq.AncestorRefsParams{ProjectID: project, ID: mid}))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			// Run it for real once (undone, so that EXPLAIN ANALYZE
			// runs it on the same rows), then measure it.
			sp, err := tx.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.run(sp)
			if err != nil {
				t.Fatal(err)
			}
			if n != c.want {
				t.Errorf("%d rows, want %d", n, c.want)
			}
			sql, args := trace.last()
			if err := sp.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if pages := explainPages(t, tx, sql, args); pages > 100 {
				t.Errorf("%s read %v pages", c.name, pages)
			}
		})
	}
}

func count[T any](rows []T, err error) (int, error) { return len(rows), err }

// tracedConn opens a connection to pool's database that remembers its last
// statement; it is closed when the test ends.
func tracedConn(t *testing.T, pool *pgxpool.Pool) (*pgx.Conn, *lastQuery) {
	t.Helper()
	cfg := pool.Config().ConnConfig.Copy()
	trace := &lastQuery{}
	cfg.Tracer = trace
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, trace
}

// explainPages runs a statement under EXPLAIN (ANALYZE, BUFFERS) and
// returns the pages it read.
func explainPages(t *testing.T, conn dbq.DBTX, sql string, args []any) float64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := pgx.CollectRows(rows, pgx.RowTo[[]map[string]any])
	if err != nil {
		t.Fatal(err)
	}
	top := plans[0][0]["Plan"].(map[string]any)
	return top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64)
}

// TestClaimProbesReadTheClaimIndex: after a claim found nothing, its probes
// of the project's ready items (ClaimNeedsTx, ClaimHopeless) read the
// project's part of the claim index, not the items table from its start:
// written as EXISTS, the planner scanned the table and stopped at the
// project's first ready row, reading every row of the projects stored
// before it (20,000 ready items in 20 older projects here).
func TestClaimProbesReadTheClaimIndex(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`INSERT INTO projects (name) SELECT 'old' || g FROM generate_series(1, 20) g`,
		`INSERT INTO items (project_id, title, created_by)
		 SELECT p.id, 'ready', 'test' FROM projects p, generate_series(1, 1000)`,
		`INSERT INTO projects (name) VALUES ('new')`,
		`INSERT INTO items (project_id, title, created_by, requires)
		 SELECT p.id, 'needs x', 'test', '{x}' FROM projects p, generate_series(1, 1000) WHERE p.name = 'new'`,
		`ANALYZE items`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM projects WHERE name = 'new'`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	q := dbq.New()
	cases := map[string]func() error{
		"ClaimNeedsTx": func() error {
			// No labels as the lease service sends them ('{}', not NULL,
			// which matches no row and lets the planner skip the missed
			// probe): the probe walks the project's 1,000 items here.
			r, err := q.ClaimNeedsTx(ctx, conn, dbq.ClaimNeedsTxParams{ProjectID: project, Capabilities: []string{"y"}, Labels: []string{}})
			if err == nil && (r.NeedsTx || !r.Hopeless) {
				t.Errorf("ClaimNeedsTx = %+v, want hopeless and no transaction", r)
			}
			return err
		},
		"ClaimHopeless": func() error {
			r, err := q.ClaimHopeless(ctx, conn, dbq.ClaimHopelessParams{ProjectID: project, Capabilities: []string{"y"}})
			if err == nil && (!r.AnyReady || r.AnyMatch) {
				t.Errorf("ClaimHopeless = %+v, want ready items and no match", r)
			}
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			if err := run(); err != nil {
				t.Fatal(err)
			}
			sql, args := trace.last()
			if pages := explainPages(t, conn, sql, args); pages > 100 {
				t.Errorf("%s read %v pages", name, pages)
			}
		})
	}
}

// TestBatchClaimReadsTheClaimIndexInOrder: a batch claim of 100 items
// reads the first ready items of the project from the claim index, in its
// order, not every ready item. The planner estimated "requires <@ '{}'"
// at 0.5% of the rows (no element statistics for an empty array column),
// so that 100 items looked like more than the project had and it read
// and sorted all of them (5,000 here; 20,000 in workload 13).
func TestBatchClaimReadsTheClaimIndexInOrder(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('p') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO items (project_id, title, created_by)
		SELECT $1, 'ready ' || g, 'test' FROM generate_series(1, 5000) g`, project); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE items`); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// Run it once for real to learn its SQL and arguments (undone), then
	// under EXPLAIN ANALYZE.
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dbq.New().ClaimItems(ctx, sp, dbq.ClaimItemsParams{
		ProjectID: project, Labels: []string{}, Worker: "w", Guarded: true, MaxItems: 100, Principal: "agent:w", TtlMs: 60000,
	})
	if err != nil || len(rows) != 100 {
		t.Fatalf("ClaimItems: %v, %d rows", err, len(rows))
	}
	sql, args := trace.last()
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	plan := explainPlan(t, tx, sql, args)
	scans := 0
	walkPlan(plan, func(node map[string]any) {
		if node["Relation Name"] == "items" && node["Alias"] == "c" {
			scans++
			if got := node["Actual Rows"].(float64); got > 200 {
				t.Errorf("the candidate scan (%s) read %v ready items for a batch of 100", node["Node Type"], got)
			}
		}
	})
	if scans != 1 {
		t.Errorf("%d candidate scans in the plan, want 1", scans)
	}
}

// explainPlan runs a statement under EXPLAIN (ANALYZE, FORMAT JSON) and
// returns its top plan node.
func explainPlan(t *testing.T, conn dbq.DBTX, sql string, args []any) map[string]any {
	t.Helper()
	rows, err := conn.Query(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := pgx.CollectRows(rows, pgx.RowTo[[]map[string]any])
	if err != nil {
		t.Fatal(err)
	}
	return plans[0][0]["Plan"].(map[string]any)
}

// walkPlan calls fn on node and every node below it.
func walkPlan(node map[string]any, fn func(map[string]any)) {
	fn(node)
	kids, _ := node["Plans"].([]any)
	for _, k := range kids {
		if m, ok := k.(map[string]any); ok {
			walkPlan(m, fn)
		}
	}
}

// TestWebhookFanOutReadsItsProjectsEvents: a webhook's fan-out reads its
// project's events after its cursor from events_pkey, on the plan
// PostgreSQL keeps for any webhook (generic), not every project's events
// in order from the first (events_all), testing each one's project and
// cursor: in a database the benchmark had filled, that was 3.7 million
// events and 6 s a call, and every delivery waited for it.
func TestWebhookFanOutReadsItsProjectsEvents(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	var other, mine uuid.UUID
	for name, dst := range map[string]*uuid.UUID{"fan-out-other": &other, "fan-out-mine": &mine} {
		if err := tx.QueryRow(ctx, `INSERT INTO projects (name) VALUES ($1) RETURNING id`, name).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	var hook uuid.UUID
	if err := tx.QueryRow(ctx, `
		INSERT INTO webhooks (project_id, url, event_types, secret, cursor, created_by, created_at, updated_at)
		VALUES ($1, 'https://example.invalid/hook', '{attention.opened}', 's', (SELECT coalesce(max(seq), 0) FROM events), 'test', now(), now())
		RETURNING id`, mine).Scan(&hook); err != nil {
		t.Fatal(err)
	}
	// After the cursor: 20,000 events of the other project, then three
	// of the webhook's project, two of the type it wants.
	if _, err := tx.Exec(ctx, `INSERT INTO events (project_id, type, actor, payload)
		SELECT $1, 'item.created', 'test', '{}' FROM generate_series(1, 20000)`, other); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO events (project_id, type, actor, payload)
		VALUES ($1, 'attention.opened', 'test', '{}'), ($1, 'item.created', 'test', '{}'), ($1, 'attention.opened', 'test', '{}')`, mine); err != nil {
		t.Fatal(err)
	}
	// Statistics that know the table is large, and the plan PostgreSQL
	// keeps for a statement after its fifth execution.
	for _, stmt := range []string{`ANALYZE events`, `SET LOCAL plan_cache_mode = force_generic_plan`} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var upTo int64
	if err := tx.QueryRow(ctx, `SELECT max(seq) FROM events`).Scan(&upTo); err != nil {
		t.Fatal(err)
	}
	// Index entries read: planning a range on seq also looks into
	// events_all (the range's actual ends), a scan of one or two entries.
	entriesRead := func(index string) int64 {
		t.Helper()
		var n int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_returned($1::regclass)`, index).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	read := entriesRead("events_all")
	created, err := dbq.New().FanOutWebhook(ctx, tx, dbq.FanOutWebhookParams{MaxRows: 100, UpTo: upTo, ProjectID: mine, ID: hook})
	if err != nil {
		t.Fatal(err)
	}
	if created != 2 {
		t.Errorf("fan-out made %d deliveries, want 2 (the project's two attention.opened events)", created)
	}
	if n := entriesRead("events_all") - read; n > 100 {
		t.Errorf("the fan-out read %d entries of events_all: it walked every project's events in order", n)
	}
	var cursor int64
	if err := tx.QueryRow(ctx, `SELECT cursor FROM webhooks WHERE project_id = $1 AND id = $2`, mine, hook).Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if cursor != upTo {
		t.Errorf("cursor %d after the fan-out, want %d (the horizon: fewer events than max_rows)", cursor, upTo)
	}
}

// TestInboxOverduePartReadsFewPages: the inbox reads a project's overdue
// open requests first (ListInboxOverdueAttention) on every load, live
// refreshes included. With 20,000 open requests of which the 3 newest are
// overdue, that read finds the 3 in at most 20 pages; filtering the
// project's open requests for the overdue ones read all of them (well
// over 100 pages).
func TestInboxOverduePartReadsFewPages(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`INSERT INTO projects (name) VALUES ('busy')`,
		`INSERT INTO items (project_id, title, created_by)
		 SELECT p.id, 'item', 'test' FROM projects p, generate_series(1, 20000)`,
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at, due_at, overdue_at)
		 SELECT project_id, id, 'person', 'p', 'q', now(),
		        CASE WHEN seq > 19997 THEN now() END, CASE WHEN seq > 19997 THEN now() END
		 FROM items ORDER BY seq`,
		`ANALYZE`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT id FROM projects WHERE name = 'busy'`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	rows, err := dbq.New().ListInboxOverdueAttention(ctx, conn, dbq.ListInboxOverdueAttentionParams{ProjectID: project, MaxRows: 51})
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d overdue requests (%v), want 3", len(rows), err)
	}
	sql, args := trace.last()
	if pages := explainPages(t, conn, sql, args); pages > 20 {
		t.Errorf("the inbox's overdue part read %v pages", pages)
	}
}

// TestEdgesAmongReadsTheEdgesOfItsItems: the edges among a picture's items
// (EdgesAmong, the project graph's 400 items) are read from the edges of
// those items, not by filtering every edge of the project: a project
// that has run for months has edges in the hundreds of thousands, and its
// picture is still 400 items. With 20,000 edges, the 400 items' edges are
// found reading at most twice as many rows of dependencies as there are
// items; filtering the project's edges read all 19,999. The plan checked
// is the generic one, which a prepared statement keeps after its fifth
// run.
func TestEdgesAmongReadsTheEdgesOfItsItems(t *testing.T) {
	t.Parallel()
	tx := dbtest.TestTx(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := tx.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('edges-among') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	setup := []string{
		`INSERT INTO items (project_id, title, status, finished_at, created_by)
		 SELECT $1, 'done', 'done', now(), 'test' FROM generate_series(1, 20000)`,
		`INSERT INTO dependencies (project_id, item_id, depends_on_id, created_by)
		 SELECT $1, i.id, lag(i.id) OVER (ORDER BY i.seq), 'test' FROM items i WHERE i.project_id = $1
		 ORDER BY i.seq OFFSET 1`,
	}
	for _, stmt := range setup {
		if _, err := tx.Exec(ctx, stmt, project); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, stmt := range []string{`ANALYZE items`, `ANALYZE dependencies`, `SET LOCAL plan_cache_mode = force_generic_plan`} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT id FROM items WHERE project_id = $1 ORDER BY seq LIMIT 400`, project)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		t.Fatal(err)
	}
	q := dbq.New()
	edges, err := q.EdgesAmong(ctx, tx, dbq.EdgesAmongParams{ProjectID: project, Ids: ids, MaxRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != 399 {
		t.Fatalf("%d edges among the first 400 items of a chain, want 399", len(edges))
	}
	// MaxRows bounds the answer (graph.MaxSubgraphEdges' reader).
	if bounded, err := q.EdgesAmong(ctx, tx, dbq.EdgesAmongParams{ProjectID: project, Ids: ids, MaxRows: 100}); err != nil || len(bounded) != 100 {
		t.Fatalf("EdgesAmong with MaxRows 100: %d edges, %v; want 100", len(bounded), err)
	}
	rec := &recordingTx{Tx: tx}
	if _, err := q.EdgesAmong(ctx, rec, dbq.EdgesAmongParams{ProjectID: project, Ids: ids, MaxRows: 1000}); err != nil {
		t.Fatal(err)
	}
	sql, args := rec.sql, rec.args
	read := 0.0
	walkPlan(explainPlan(t, tx, sql, args), func(n map[string]any) {
		if n["Relation Name"] != "dependencies" {
			return
		}
		removed, _ := n["Rows Removed by Filter"].(float64)
		read += (n["Actual Rows"].(float64) + removed) * n["Actual Loops"].(float64)
	})
	if read == 0 || read > 2*float64(len(ids)) {
		t.Errorf("EdgesAmong read %v rows of dependencies for %d items", read, len(ids))
	}
}

// recordingTx is a transaction that remembers the last query it ran.
type recordingTx struct {
	pgx.Tx
	sql  string
	args []any
}

func (r *recordingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.sql, r.args = sql, args
	return r.Tx.Query(ctx, sql, args...)
}

// TestItemAttentionReadsItsPageOnly: an item that collected 20,000
// attention requests is read a page at a time: the claim's latest
// requests (AttentionForItemBefore, and AttentionLatestOfItems for a
// batch's items) and a page from its first (AttentionForItem) read their
// own rows only, about 3 pages a row (the
// index, the row, its item's title), never the item's history: reading
// every request of the item, as the claim did, read thousands. The plans
// checked are the generic ones, which a prepared statement keeps after its
// fifth run.
func TestItemAttentionReadsItsPageOnly(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`INSERT INTO projects (name) VALUES ('chatty')`,
		`INSERT INTO items (project_id, title, created_by)
		 SELECT p.id, 'item ' || g, 'test' FROM projects p, generate_series(1, 100) g`,
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at, state, answer, resolved_by, resolved_at)
		 SELECT i.project_id, i.id, 'person', 'p', 'q', now(), 'resolved', 'a', 'p', now()
		 FROM items i, generate_series(1, 20000) WHERE i.title = 'item 1'`,
		`ANALYZE`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project, item uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT project_id, id FROM items WHERE title = 'item 1'`).Scan(&project, &item); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	q := dbq.New()
	for name, read := range map[string]struct {
		max    int32
		perRow int // pages a row may read
		rows   func(max int32) (int, error)
	}{
		"AttentionForItemBefore": {21, 4, func(max int32) (int, error) {
			rows, err := q.AttentionForItemBefore(ctx, conn, dbq.AttentionForItemBeforeParams{ProjectID: project, ItemID: item, BeforeSeq: math.MaxInt64, MaxRows: max})
			return len(rows), err
		}},
		"AttentionForItem": {51, 4, func(max int32) (int, error) {
			rows, err := q.AttentionForItem(ctx, conn, dbq.AttentionForItemParams{ProjectID: project, ItemID: item, AfterSeq: 0, MaxRows: max})
			return len(rows), err
		}},
		// A batch claim's histories: each item's latest read as
		// AttentionForItemBefore reads it, and each row read again by its
		// key for the answer (about 6 pages a row).
		"AttentionLatestOfItems": {21, 7, func(max int32) (int, error) {
			rows, err := q.AttentionLatestOfItems(ctx, conn, dbq.AttentionLatestOfItemsParams{ProjectID: project, ItemIds: []uuid.UUID{item}, MaxRows: max, MaxBytes: 4 << 20})
			return len(rows), err
		}},
	} {
		n, err := read.rows(read.max)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != int(read.max) {
			t.Errorf("%s: %d rows, want a page of %d", name, n, read.max)
		}
		sql, args := trace.last()
		if pages := explainPages(t, conn, sql, args); pages > float64(int32(read.perRow)*read.max+10) {
			t.Errorf("%s read %v pages for a page of %d rows", name, pages, read.max)
		}
	}
}

// TestAskBoundReadsOpenQuestionsOnly: the bound on a lease's open
// questions is counted by the statement that inserts one
// (InsertAttention's max_open) from the lease's open non-blocking
// requests only, however many it asked before and however many open
// requests its project has: with 20,000 answered ones and 20,000 open
// requests of other items, counting either read them all (thousands of
// pages); the whole insert, its indexes and its event included, reads at
// most 100.
func TestAskBoundReadsOpenQuestionsOnly(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`INSERT INTO projects (name) VALUES ('asker')`,
		`INSERT INTO items (project_id, title, created_by, epoch)
		 SELECT p.id, 'item ' || g, 'test', 1 FROM projects p, generate_series(1, 100) g`,
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		 SELECT project_id, id, 1, 'w', 'w', now(), now() + interval '1 hour' FROM items`,
		`INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, requested_by, question, created_at,
		                                 state, answer, resolved_by, resolved_at)
		 SELECT l.project_id, l.item_id, l.id, 1, 'worker', 'w', 'q', now(), 'resolved', 'a', 'p', now()
		 FROM leases l, generate_series(1, 20000) WHERE l.item_id = (SELECT id FROM items WHERE title = 'item 1')`,
		// and a busy inbox: 20,000 open questions about the other items
		`INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at)
		 SELECT i.project_id, i.id, 'person', 'p', 'q', now() FROM items i, generate_series(1, 202) WHERE i.title <> 'item 1'`,
		`ANALYZE`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project, item, lease uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT l.project_id, l.item_id, l.id FROM leases l JOIN items i ON i.id = l.item_id
		WHERE i.title = 'item 1'`).Scan(&project, &item, &lease); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	epoch, maxOpen := int64(1), int32(20)
	if _, err := dbq.New().InsertAttention(ctx, tx, dbq.InsertAttentionParams{
		ProjectID: project, ItemID: item, LeaseID: &lease, Epoch: &epoch, Source: "worker", Reason: "question",
		RequestedBy: "w", Question: "one more?", SuggestedAnswers: []string{}, MaxOpen: &maxOpen,
	}); err != nil {
		t.Fatal(err)
	}
	sql, args := trace.last()
	if pages := explainPages(t, tx, sql, args); pages > 100 {
		t.Errorf("an ask of a lease that asked 20,000 questions before read %v pages", pages)
	}
}

// TestHeartbeatAnswersReadTheirRowsOnly: a heartbeat's answers
// (ClosedNonBlockingForLease, the newest attention.AnswersPerHeartbeat + 1)
// are read from attention_answers_by_lease (migration 00116), backwards,
// however many answered questions the lease has: with 2,000 of them (and
// 18,000 of other leases) the lease's other index (attention_by_lease, no
// order) read and sorted them all.
func TestHeartbeatAnswersReadTheirRowsOnly(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // see freshForPlans
	ctx := context.Background()
	setup := []string{
		`INSERT INTO projects (name) VALUES ('chatty')`,
		`INSERT INTO items (project_id, title, created_by, epoch)
		 SELECT p.id, 'item ' || g, 'test', 1 FROM projects p, generate_series(1, 10) g`,
		`INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		 SELECT project_id, id, 1, 'w', 'w', now(), now() + interval '1 hour' FROM items`,
		`INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, requested_by, question, created_at,
		                                 blocking, state, answer, resolved_by, resolved_at)
		 SELECT l.project_id, l.item_id, l.id, 1, 'worker', 'w', 'q', now(), false, 'resolved', 'a', 'p', now()
		 FROM leases l, generate_series(1, 2000)`,
		`ANALYZE`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var project, lease uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT l.project_id, l.id FROM leases l JOIN items i ON i.id = l.item_id
		WHERE i.title = 'item 1'`).Scan(&project, &lease); err != nil {
		t.Fatal(err)
	}
	conn, trace := tracedConn(t, pool)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	const max = 21
	rows, err := dbq.New().ClosedNonBlockingForLease(ctx, conn, dbq.ClosedNonBlockingForLeaseParams{ProjectID: project, LeaseID: &lease, MaxRows: max})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != max {
		t.Errorf("%d rows, want %d", len(rows), max)
	}
	sql, args := trace.last()
	if pages := explainPages(t, conn, sql, args); pages > 4*max+10 {
		t.Errorf("ClosedNonBlockingForLease read %v pages for %d rows", pages, max)
	}
}
