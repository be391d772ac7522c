package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestDatabaseUnavailable: a page asked for while the database is gone is
// a 503 page with Retry-After, not a 500.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	wantStatus(t, b.get("/p/acme/items"), http.StatusOK)

	ctx := context.Background()
	var dbName string
	if err := e.pool.QueryRow(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	a, err := pgx.Connect(ctx, dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	name := pgx.Identifier{dbName}.Sanitize()
	if _, err := a.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	defer a.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true")
	if _, err := a.Exec(ctx, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1", dbName); err != nil {
		t.Fatal(err)
	}
	r := b.get("/p/acme/items")
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantBody(t, r, "Try again in a moment")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("503 page without Retry-After")
	}
}
