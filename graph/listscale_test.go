package graph

import (
	"context"
	"fmt"
	"strings"
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
	return strings.HasPrefix(sql, "-- name: ListItems") || strings.HasPrefix(sql, "-- name: ListFinishedItems")
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

// TestSortedItemListsReadTheirPage: a page of a list sorted by priority or
// by last change reads the project's open items and a page of its finished
// ones, not every item of the project: with 20,000 finished items (done
// and cancelled) and 30 open ones, each statement of two pages of 25, in
// each sorted order, without a state filter and of the done items, reads
// at most 60 pages (a sort of the project's items reads all of them: over
// 500), and the pages hold what a sort of every item gives, open and
// finished items interleaved. The cancelled items (one in 50) are sorted
// right too; their pages read them all (about 400 pages), a cost that
// follows the project's cancellations.
//
// Its own database (dbtest.Fresh): the bound counts pages (see
// TestListItemsByStateReadsItsStatusOnly).
func TestSortedItemListsReadTheirPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Fresh(t)
	var project uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('sorted') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	// Priorities 0..9 and change times spread so that open and finished
	// items interleave in every order, with ties in both keys.
	setup := []string{
		`INSERT INTO items (project_id, title, status, finished_at, priority, updated_at, created_by)
		 SELECT $1, 'finished ' || g, CASE WHEN g % 50 = 0 THEN 'cancelled' ELSE 'done' END, now(), g % 10,
		        timestamptz '2030-01-01' + (g % 5000) * interval '1 second', 'test'
		 FROM generate_series(1, 20000) g`,
		`INSERT INTO items (project_id, title, priority, updated_at, created_by)
		 SELECT $1, 'open ' || g, g % 10, timestamptz '2030-01-01' + (g * 163 % 5000) * interval '1 second', 'test'
		 FROM generate_series(1, 30) g`,
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
	orderSQL := map[ItemOrder]string{
		OrderPriority:  "priority, seq",
		OrderPriorityD: "priority DESC, seq DESC",
		OrderUpdated:   "updated_at, seq",
		OrderUpdatedD:  "updated_at DESC, seq DESC",
	}
	for _, states := range [][]State{nil, {StateDone}, {StateCancelled}} {
		for order, by := range orderSQL {
			where := "true"
			if len(states) == 1 {
				where = "status = '" + string(states[0]) + "'"
			}
			rows, err := pool.Query(ctx, `SELECT id FROM items WHERE project_id = $1 AND `+where+` ORDER BY `+by+` LIMIT 50`, project)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil {
				t.Fatal(err)
			}
			var got []uuid.UUID
			cursor := ""
			for range 2 {
				trace.take()
				pg, err := svc.ListItems(ctx, project, ListFilter{States: states, Order: order, Limit: 25, Cursor: cursor})
				if err != nil {
					t.Fatalf("%v by %s: %v", states, order, err)
				}
				for _, it := range pg.Items {
					got = append(got, it.ID)
				}
				lists := 0
				for _, s := range trace.take() {
					if !isItemList(s.sql) {
						continue
					}
					lists++
					bounded := len(states) == 0 || states[0] == StateDone
					if pages := pagesRead(t, pool, s); bounded && pages > 60 {
						t.Errorf("%v by %s: a statement of the list read %v pages", states, order, pages)
					}
				}
				if lists == 0 {
					t.Fatalf("%v by %s: no item list traced", states, order)
				}
				cursor = pg.NextCursor
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v by %s:\n got %v\nwant %v", states, order, got, want)
			}
		}
	}
}
