package dbq_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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

func (l *lastQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestLookupsByBareIDUseAnIndex: the statements that find a row by its id
// alone, without its project (routes such as /v1/leases/{id}), read a few
// index and heap pages, not the whole table: with 10,000 leases and
// attention requests in 50 projects, each lookup runs and then runs again
// under EXPLAIN (ANALYZE, BUFFERS), which must count at most 8 pages
// (reading the table or its primary key takes well over 50).
func TestLookupsByBareIDUseAnIndex(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
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
	cfg := pool.Config().ConnConfig.Copy()
	trace := &lastQuery{}
	cfg.Tracer = trace
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
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
			trace.mu.Lock()
			sql, args := trace.sql, trace.args
			trace.mu.Unlock()
			rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...)
			if err != nil {
				t.Fatal(err)
			}
			plans, err := pgx.CollectRows(rows, pgx.RowTo[[]map[string]any])
			if err != nil {
				t.Fatal(err)
			}
			top := plans[0][0]["Plan"].(map[string]any)
			pages := top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64)
			if pages > 8 {
				out, _ := json.MarshalIndent(plans[0], "", "  ")
				t.Errorf("%s reads %v pages:\n%s", name, pages, out)
			}
		})
	}
}
