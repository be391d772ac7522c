package graph

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// statementTrace remembers every statement a pool's connections ran, with
// its arguments.
type statementTrace struct {
	mu    sync.Mutex
	stmts []tracedStatement
}

type tracedStatement struct {
	sql  string
	args []any
}

func (s *statementTrace) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stmts = append(s.stmts, tracedStatement{d.SQL, d.Args})
	return ctx
}

func (s *statementTrace) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements traced since the last take.
func (s *statementTrace) take() []tracedStatement {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stmts
	s.stmts = nil
	return out
}

// tracedPool is a pool on the database of pool whose statements are traced.
func tracedPool(t *testing.T, pool *pgxpool.Pool) (*pgxpool.Pool, *statementTrace) {
	t.Helper()
	cfg := pool.Config().Copy()
	trace := &statementTrace{}
	cfg.ConnConfig.Tracer = trace
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return traced, trace
}

// pagesRead runs a traced statement again under EXPLAIN (ANALYZE,
// BUFFERS) and returns the pages it read (shared hits and reads).
func pagesRead(t *testing.T, pool *pgxpool.Pool, s tracedStatement) float64 {
	t.Helper()
	var plans []map[string]any
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+s.sql, s.args...).Scan(&plans); err != nil {
		t.Fatalf("explain %s: %v", s.sql, err)
	}
	top := plans[0]["Plan"].(map[string]any)
	return top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64)
}

// TestListItemsByStateReadsItsStatusOnly: a list filtered by an open state
// (ready, leased, blocked, attention) or by cancelled reads the project's
// items of that status, not its whole history. A project of 20,000 done
// items, 5 ready and 3 cancelled: each list below, in each order, reads a
// few dozen pages at most, where a walk of the project's items in creation
// order reads every one of them (hundreds of pages) to find the few that
// match, and a sort by priority or change sorts them all.
//
// Its own database (dbtest.Fresh): the bound counts pages, which a reused
// database's grown indexes would change (see db/dbq's freshForPlans).
func TestListItemsByStateReadsItsStatusOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Fresh(t)
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('history') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	setup := []string{
		`INSERT INTO items (project_id, title, status, finished_at, created_by)
		 SELECT $1, 'done ' || g, 'done', now(), 'test' FROM generate_series(1, 20000) g`,
		`INSERT INTO items (project_id, title, created_by, priority) SELECT $1, 'ready ' || g, 'test', g FROM generate_series(1, 5) g`,
		`INSERT INTO items (project_id, title, status, finished_at, created_by)
		 SELECT $1, 'cancelled ' || g, 'cancelled', now(), 'test' FROM generate_series(1, 3) g`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, stmt, project); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	traced, trace := tracedPool(t, pool)
	svc := NewService(traced, clock.NewStub(t0))
	for _, tc := range []struct {
		state State
		want  int
	}{{StateReady, 5}, {StateCancelled, 3}, {StateLeased, 0}, {StateBlocked, 0}, {StateAttention, 0}} {
		for _, order := range ItemOrders {
			trace.take()
			got, err := svc.ListItems(ctx, project, ListFilter{States: []State{tc.state}, Order: order, Limit: 25})
			if err != nil {
				t.Fatalf("%s by %s: %v", tc.state, order, err)
			}
			if len(got.Items) != tc.want {
				t.Fatalf("%s by %s: %d items, want %d", tc.state, order, len(got.Items), tc.want)
			}
			lists := 0
			for _, s := range trace.take() {
				if !isItemList(s.sql) {
					continue
				}
				lists++
				if pages := pagesRead(t, pool, s); pages > 40 {
					t.Errorf("the %s items by %s: the list read %v pages", tc.state, order, pages)
				}
			}
			if lists != 1 {
				t.Fatalf("%s by %s: %d item lists traced, want 1", tc.state, order, lists)
			}
		}
	}
}

// isItemList tells ListItems' statements from the others of its read.
func isItemList(sql string) bool {
	for _, name := range []string{"-- name: ListItems :many", "-- name: ListItemsNewest :many", "-- name: ListItemsSorted :many"} {
		if len(sql) >= len(name) && sql[:len(name)] == name {
			return true
		}
	}
	return false
}

// TestProjectGraphDrawsTheOpenWorkFirst: a project's picture, cut at its
// limit, holds the project's open items (oldest first), then its latest
// finished ones; not the first items ever created, which in a project that
// has run for months are finished work of long ago. 60 done items, then 4
// open ones (a chain), then 10 done: a picture of 8 holds the 4 open items
// and the 4 latest done ones, with the chain's edges and critical path.
func TestProjectGraphDrawsTheOpenWorkFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	finish := func(n int) []uuid.UUID {
		var ids []uuid.UUID
		for range n {
			it := f.mustItem(t, itemOpts{})
			f.mustFinish(t, it.ID, StatusDone)
			ids = append(ids, it.ID)
		}
		return ids
	}
	finish(60)
	var open []uuid.UUID
	for i := range 4 {
		o := itemOpts{}
		if i > 0 {
			o.DependsOn = []uuid.UUID{open[i-1]}
		}
		open = append(open, f.mustItem(t, o).ID)
	}
	latest := finish(10)[6:]
	g, err := f.svc.Subgraph(ctx, f.project, nil, 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uuid.UUID]bool{}
	for _, n := range g.Nodes {
		got[n.ID] = true
	}
	for _, id := range append(append([]uuid.UUID{}, open...), latest...) {
		if !got[id] {
			t.Errorf("item %s not in the picture", id)
		}
	}
	if len(g.Nodes) != 8 || !g.Truncated {
		t.Errorf("%d nodes, truncated %v; want 8, truncated", len(g.Nodes), g.Truncated)
	}
	if len(g.Edges) != 3 || len(g.CriticalPath) != 4 || g.CriticalPath[3] != open[3] {
		t.Errorf("edges %v, critical path %v; want the open chain's 3 edges and 4 items", g.Edges, g.CriticalPath)
	}
}
