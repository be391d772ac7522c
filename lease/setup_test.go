package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

const ttl = time.Minute

type fixture struct {
	ctx     context.Context
	conn    db.Executor   // what the services run on: the test's transaction, or pool
	pool    *pgxpool.Pool // nil unless the test has a database of its own (setupDB)
	clock   *clock.Stub
	graph   *graph.Service
	leases  *lease.Service
	att     *attention.Service
	cfg     lease.Config
	project uuid.UUID
}

var projectCounter atomic.Int64

// setup gives a test a transaction rolled back when it ends, a stub clock
// set to the database's now, the services on it and a project. cfg's zero
// TTL fields default to ttl for claims.
func setup(t testing.TB, cfg lease.Config) fixture {
	t.Helper()
	return setupOn(t, dbtest.TestTx(t), nil, cfg)
}

// setupDB is setup on a database of the test's own, for a test that must
// commit, LISTEN, or run statements concurrently (it says which).
func setupDB(t testing.TB, cfg lease.Config) fixture {
	t.Helper()
	pool := dbtest.New(t)
	return setupOn(t, pool, pool, cfg)
}

// setupFresh is setupDB on a new database (dbtest.Fresh), for a test that
// migrates it down and up: a reused database must keep the template's
// schema.
func setupFresh(t testing.TB, cfg lease.Config) fixture {
	t.Helper()
	pool := dbtest.Fresh(t)
	return setupOn(t, pool, pool, cfg)
}

func setupOn(t testing.TB, conn db.Executor, pool *pgxpool.Pool, cfg lease.Config) fixture {
	t.Helper()
	ctx := context.Background()
	var t0 time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	if cfg.DefaultTTL == 0 {
		cfg.DefaultTTL = ttl
	}
	g := graph.NewService(conn, clk)
	p, err := g.CreateProject(ctx, fmt.Sprintf("p%d", projectCounter.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return fixture{
		ctx: ctx, conn: conn, pool: pool, clock: clk, graph: g, cfg: cfg, project: p.ID,
		leases: lease.NewService(conn, clk, cfg),
		att:    attention.NewService(conn, clk, attention.Config{ContinuityWindow: 10 * time.Minute}),
	}
}

// indexScans is how many scans of index the test's transaction has made
// so far (planning a range may scan an index too: compare before and
// after, over the statements under test).
func (f fixture) indexScans(t testing.TB, index string) int64 {
	t.Helper()
	var n int64
	if err := f.conn.QueryRow(f.ctx, `SELECT pg_stat_get_xact_numscans($1::regclass)`, index).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// doneItems adds n done items to the project, titled "history 1" to
// "history n" in creation order (items.seq): the items of a loaded
// history, whose leases a test inserts itself.
func (f fixture) doneItems(t testing.TB, n int) {
	t.Helper()
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO items (project_id, title, status, epoch, created_by, finished_at)
		SELECT $1, 'history ' || g, 'done', 1, 'test', now() FROM generate_series(1, $2::int) AS g`, f.project, n); err != nil {
		t.Fatal(err)
	}
}

// withWindow is f with its attention service (the one that resolves
// requests, as the server's does) giving continuity windows of w.
func (f fixture) withWindow(w time.Duration) fixture {
	f.att = attention.NewService(f.conn, f.clock, attention.Config{ContinuityWindow: w})
	return f
}

// item creates an open item; in's empty Title and CreatedBy get defaults.
func (f fixture) item(t testing.TB, in graph.NewItem) graph.Item {
	t.Helper()
	if in.Title == "" {
		in.Title = "item " + uuid.NewString()[:8]
	}
	if in.CreatedBy == "" {
		in.CreatedBy = "test"
	}
	it, err := f.graph.CreateItem(f.ctx, f.project, in)
	if err != nil {
		t.Fatalf("CreateItem: %v", err)
	}
	return it
}

func (f fixture) items(t testing.TB, n int) []graph.Item {
	t.Helper()
	out := make([]graph.Item, n)
	for i := range out {
		out[i] = f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i)})
	}
	return out
}

func (f fixture) claim(t testing.TB, worker string) lease.Claim {
	t.Helper()
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
	if err != nil {
		t.Fatalf("Claim(%s): %v", worker, err)
	}
	return c
}

func fence(l lease.Lease) lease.Fence { return lease.Fence{LeaseID: l.ID, Epoch: l.Epoch} }

// snapshot is the stored state of an item and all its leases, as text, for
// before/after comparisons.
func (f fixture) snapshot(t testing.TB, item uuid.UUID) string {
	t.Helper()
	var s string
	err := f.conn.QueryRow(f.ctx, `
		SELECT (SELECT row_to_json(i)::text FROM items i WHERE i.project_id = $1 AND i.id = $2) || ' ' ||
		       coalesce((SELECT json_agg(l ORDER BY l.seq)::text FROM leases l WHERE l.project_id = $1 AND l.item_id = $2), '[]') || ' ' ||
		       coalesce((SELECT json_agg(a ORDER BY a.seq)::text FROM attention_requests a WHERE a.project_id = $1 AND a.item_id = $2), '[]')`,
		f.project, item).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// getItem reads an item through the graph package.
func (f fixture) getItem(t testing.TB, id uuid.UUID) graph.Item {
	t.Helper()
	it, err := f.graph.Item(f.ctx, f.project, id)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func (f fixture) getLease(t testing.TB, id uuid.UUID) lease.Lease {
	t.Helper()
	l, err := f.leases.Get(f.ctx, f.project, id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkInvariants verifies, in SQL, what must hold at any commit: at most
// one active lease per item; every ended lease has exactly one outcome; an
// item's active lease is an unended lease of it at the item's epoch; epochs
// of an item's leases are distinct and increase with their order.
func (f fixture) checkInvariants(t testing.TB) {
	t.Helper()
	checks := map[string]string{
		"two active leases on one item": `
			SELECT count(*) FROM (SELECT item_id FROM leases WHERE project_id = $1 AND ended_at IS NULL
			                      GROUP BY item_id HAVING count(*) > 1) x`,
		"ended lease without exactly one outcome": `
			SELECT count(*) FROM leases WHERE project_id = $1 AND (ended_at IS NULL) <> (outcome IS NULL)`,
		"item's active lease is not its current unended lease": `
			SELECT count(*) FROM items i WHERE i.project_id = $1 AND i.active_lease_id IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.project_id = i.project_id AND l.id = i.active_lease_id
			                AND l.ended_at IS NULL AND l.epoch = i.epoch AND l.item_id = i.id)`,
		"unended lease not named by its item": `
			SELECT count(*) FROM leases l JOIN items i ON i.project_id = l.project_id AND i.id = l.item_id
			WHERE l.project_id = $1 AND l.ended_at IS NULL AND i.active_lease_id IS DISTINCT FROM l.id`,
		"epochs not increasing in claim order": `
			SELECT count(*) FROM (SELECT epoch, lag(epoch) OVER (PARTITION BY item_id ORDER BY seq) AS prev
			                      FROM leases WHERE project_id = $1) x WHERE prev IS NOT NULL AND epoch <= prev`,
		"item epoch behind its leases": `
			SELECT count(*) FROM items i WHERE i.project_id = $1
			AND i.epoch <> coalesce((SELECT max(epoch) FROM leases l WHERE l.project_id = i.project_id AND l.item_id = i.id), 0)`,
	}
	for name, q := range checks {
		var n int
		if err := f.conn.QueryRow(f.ctx, q, f.project).Scan(&n); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != 0 {
			t.Errorf("invariant broken: %s (%d rows)", name, n)
		}
	}
}

// claimNew creates an item with a label of its own and claims exactly that
// item, whatever else is ready in the project.
func (f fixture) claimNew(t testing.TB, worker string) (graph.Item, lease.Lease) {
	t.Helper()
	label := "t-" + uuid.NewString()[:8]
	it := f.item(t, graph.NewItem{Labels: []string{label}})
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker, Labels: []string{label}})
	if err != nil {
		t.Fatalf("Claim(%s): %v", worker, err)
	}
	if c.Item.ID != it.ID {
		t.Fatalf("claimed %v, want %v", c.Item.ID, it.ID)
	}
	return it, c.Lease
}
