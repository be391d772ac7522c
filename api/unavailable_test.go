package api_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// syncBuffer is a log sink the server's goroutines may write concurrently.
type syncBuffer = servertest.SyncBuffer

// logged boots the server with its log captured.
func logged(t *testing.T, tune ...func(*server.Config)) (*env, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	e := setup(t, append([]func(*server.Config){func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) }}, tune...)...)
	return e, logs
}

// admin connects to the test server's "postgres" database, outside the
// server's pool, to act on the server's own test database.
func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// unavailable checks a 503 answer: problem code unavailable, Retry-After,
// and the request id in both the header and the body.
func unavailable(t *testing.T, r resp) {
	t.Helper()
	p := r.problem(t, 503, "unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if id := r.header.Get("X-Request-Id"); id == "" || p["request_id"] != id {
		t.Fatalf("request id: header %q, body %v", id, p["request_id"])
	}
}

// TestDatabaseLost: connection-level failures of the server's database
// are answered 503 unavailable (retry), never 500, and the server recovers
// by itself.
func TestDatabaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("TerminatedMidStatement", func(t *testing.T) {
		t.Parallel()
		e, logs := logged(t)
		var dbName string
		if err := e.pool.QueryRow(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
			t.Fatal(err)
		}
		// Hold a lock the request's statement waits for, then terminate
		// the server's backend while it waits.
		tx, err := e.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "LOCK TABLE projects IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		answer := make(chan resp, 1)
		go func() { answer <- e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "cut"}) }()
		a := admin(t)
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int
			err := a.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = $1 AND wait_event_type = 'Lock' AND query LIKE '%projects%'`, dbName).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the request never waited for the lock")
			}
			time.Sleep(20 * time.Millisecond)
		}
		unavailable(t, <-answer)
		tx.Rollback(ctx)
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'cut'"); n != 0 {
			t.Fatal("the cut request stored its project")
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("a lost connection was logged as an error:\n%s", logs)
		}
		e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "cut"}).ok(t, 201, nil)
	})

	t.Run("DatabaseGone", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		var dbName string
		if err := e.pool.QueryRow(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
			t.Fatal(err)
		}
		a := admin(t)
		// No new connections, and every connection of the server ended.
		if _, err := a.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{dbName}.Sanitize()+` ALLOW_CONNECTIONS false`); err != nil {
			t.Fatal(err)
		}
		allow := func() {
			if _, err := a.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{dbName}.Sanitize()+` ALLOW_CONNECTIONS true`); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(allow)
		if _, err := a.Exec(ctx, `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1`, dbName); err != nil {
			t.Fatal(err)
		}
		unavailable(t, e.do("GET", "/v1/projects", adminToken, nil))
		unavailable(t, e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "gone"}, withHeader("Idempotency-Key", "gone-1")))
		allow()
		// Back without a restart (once the pool has dropped its dead
		// connections: a client retries 503s); the refused request's key is
		// free.
		var r resp
		for range 50 {
			r = e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "gone"}, withHeader("Idempotency-Key", "gone-1"))
			if r.status != 503 {
				break
			}
			unavailable(t, r)
		}
		r.ok(t, 201, nil)
	})

	t.Run("InternalLoggedWithCause", func(t *testing.T) {
		t.Parallel()
		// A fresh database: the test renames a column, a change of the
		// schema that a reused database would hand to the next test.
		e, logs := logged(t, func(c *server.Config) { c.DatabaseURL = dbtest.FreshURL(t) })
		if _, err := e.pool.Exec(ctx, "ALTER TABLE projects RENAME COLUMN name TO name_was"); err != nil {
			t.Fatal(err)
		}
		r := e.do("GET", "/v1/projects", adminToken, nil, withHeader("X-Request-Id", "trace-42"))
		p := r.problem(t, 500, "internal")
		if p["request_id"] != "trace-42" || r.header.Get("X-Request-Id") != "trace-42" {
			t.Fatalf("request id not kept: header %q, body %v", r.header.Get("X-Request-Id"), p["request_id"])
		}
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="internal error"`) {
				line = l
			}
		}
		if !strings.Contains(line, "request_id=trace-42") || !strings.Contains(line, "SQLSTATE 42703") {
			t.Fatalf("the 500 is not logged with its request id and cause:\n%s", logs)
		}
		// An id that is not sane is replaced.
		r = e.do("GET", "/v1/projects", adminToken, nil, withHeader("X-Request-Id", "bad id\twith spaces"))
		if id := r.header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \t") {
			t.Fatalf("an insane request id was kept: %q", id)
		}
	})
}
