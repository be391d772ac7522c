package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/internal/pgbouncer"
	"github.com/workgraph-dev/workgraph/server"
)

// startPgBouncer starts a PgBouncer of the test's own (on a unix socket in
// a directory of its own), in transaction mode with a small server pool
// (so clients' transactions share server connections), in front of the
// test PostgreSQL, and returns directURL rewritten to go through it. It skips the test when pgbouncer is not
// installed (.ci/run installs it).
func startPgBouncer(t testing.TB, directURL string) string {
	t.Helper()
	b, err := pgbouncer.Start(pgbouncer.Config{Backend: directURL, PoolSize: 4})
	if errors.Is(err, pgbouncer.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b.URL
}

// TestPgBouncer runs the server with its main URL through PgBouncer in
// transaction mode and the direct URL for LISTEN: a claim -> heartbeat ->
// complete lifecycle, a long-poll claim woken by a release, and several
// clients at once (so their transactions share server connections: a
// statement prepared on one would not be there for the next).
func TestPgBouncer(t *testing.T) {
	t.Parallel()
	direct := dbtest.URL(t)
	pooled := startPgBouncer(t, direct)
	srv := start(t, func(c *server.Config) {
		c.DatabaseURL = pooled
		c.ListenDatabaseURL = direct
	})
	ctx := context.Background()
	admin, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "pooled"); err != nil {
		t.Fatalf("create project: %v", err)
	}
	tok, err := admin.CreateToken(ctx, "pooled", client.CreateTokenRequest{Name: "agent", Role: "agent"})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	agent, err := client.New(srv.URL(), tok.Secret)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Lifecycle", func(t *testing.T) {
		item, err := agent.CreateItem(ctx, "pooled", client.CreateItemRequest{Title: "through the pooler"})
		if err != nil {
			t.Fatalf("create item: %v", err)
		}
		c, err := agent.Claim(ctx, "pooled", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if c.Item.ID != item.ID {
			t.Fatalf("claimed %s, want %s", c.Item.ID, item.ID)
		}
		if _, err := agent.Heartbeat(ctx, c.Lease.ID, client.HeartbeatRequest{Epoch: c.Lease.Epoch}); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		done, err := agent.Complete(ctx, c.Lease.ID, client.CompleteRequest{Epoch: c.Lease.Epoch, Result: json.RawMessage(`{"ok":true}`)})
		if err != nil {
			t.Fatalf("complete: %v", err)
		}
		if done.Lease.Outcome == nil || *done.Lease.Outcome != "completed" {
			t.Fatalf("outcome = %v, want completed", done.Lease.Outcome)
		}
		if _, err := agent.Heartbeat(ctx, c.Lease.ID, client.HeartbeatRequest{Epoch: c.Lease.Epoch}); err == nil {
			t.Fatal("heartbeat after complete succeeded; want the lease lost")
		}
	})

	t.Run("LongPollWokenByRelease", func(t *testing.T) {
		if _, err := agent.CreateItem(ctx, "pooled", client.CreateItemRequest{Title: "released"}); err != nil {
			t.Fatal(err)
		}
		held, err := agent.Claim(ctx, "pooled", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		got := make(chan error, 1)
		go func() {
			c, err := agent.Claim(ctx, "pooled", client.ClaimRequest{Worker: "w2", WaitSeconds: 30})
			if err == nil && c.Item.ID != held.Item.ID {
				err = fmt.Errorf("woken with %s, want %s", c.Item.ID, held.Item.ID)
			}
			got <- err
		}()
		// The waiting claim found nothing ready once its wait is registered;
		// release only then, so the wake-up comes from NOTIFY.
		waitForWaiter(t, direct, "w2")
		if _, err := agent.Release(ctx, held.Lease.ID, client.ReleaseRequest{Epoch: held.Lease.Epoch}); err != nil {
			t.Fatalf("release: %v", err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("long-poll claim: %v", err)
			}
		case <-time.After(25 * time.Second):
			t.Fatal("the long-poll claim was not woken by the release")
		}
	})

	t.Run("ConcurrentClients", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 5 {
					if _, err := agent.CreateItem(ctx, "pooled", client.CreateItemRequest{Title: fmt.Sprintf("c%d-%d", i, j)}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("create item through the pooler: %v", err)
		}
	})
}

// waitForWaiter waits until the database of direct has no active
// statement besides its own: the long-poll claim has found nothing ready
// and waits for a notification.
func waitForWaiter(t *testing.T, direct, _ string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for ctx.Err() == nil {
		var busy int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`).Scan(&busy)
		if err != nil {
			t.Fatal(err)
		}
		if busy == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the database did not go idle")
}

// BenchmarkPgBouncerExecMode compares pgx's exec modes that work through
// PgBouncer in transaction mode (1.18 has no max_prepared_statements), on
// one parameterised query through the test's own PgBouncer:
// go test -run '^$' -bench PgBouncerExecMode ./server/
func BenchmarkPgBouncerExecMode(b *testing.B) {
	pooled := startPgBouncer(b, dbtest.URL(b))
	for _, mode := range []string{"exec", "describe_exec", "cache_describe"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			pool, err := db.Open(ctx, pooled+"&default_query_exec_mode="+mode, 4)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			b.ResetTimer()
			for b.Loop() {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND status = $2`,
					"00000000-0000-0000-0000-000000000000", "ready").Scan(&n)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// emptyDatabase creates a database with no schema for this test on the
// test server and returns its URL; it is dropped after the test (dbtest.DropLater).
func emptyDatabase(t *testing.T, name string) string {
	t.Helper()
	base := dbtest.ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name = fmt.Sprintf("wgtest_%s_%d", name, os.Getpid())
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	// Dropped with the binary's other databases, not at the test's end: a
	// DROP DATABASE waits for a checkpoint of the whole server (30 s and
	// more while the suite runs).
	dbtest.DropLater(t, name)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestMigrateThroughPgBouncer: `workgraph migrate` (db.Open on the URL,
// then db.Migrate) works with the URL on PgBouncer in transaction mode:
// three migrators at once on an empty database (replicas starting
// together) each succeed and every migration is applied exactly once; and
// a migrator waits while another holds the migration lock. A session
// advisory lock would be left on whichever server connection ran it (and
// taken again, as its holder, by another client that gets that
// connection), and prepared statements would be missing on the next
// transaction's connection.
func TestMigrateThroughPgBouncer(t *testing.T) {
	t.Parallel()
	direct := emptyDatabase(t, "pgbmigrate")
	pooled := startPgBouncer(t, direct)
	ctx := context.Background()

	migrate := func() error {
		pool, err := db.Open(ctx, pooled, 4)
		if err != nil {
			return err
		}
		defer pool.Close()
		return db.Migrate(ctx, pool, nil)
	}
	t.Run("ConcurrentOnEmpty", func(t *testing.T) {
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- migrate() }()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("migrate through PgBouncer: %v", err)
			}
		}
		entries, err := fs.ReadDir(db.Migrations(), ".")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, direct)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var rows, versions int
		err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id)
			FROM goose_db_version WHERE version_id > 0 AND is_applied`).Scan(&rows, &versions)
		if err != nil {
			t.Fatal(err)
		}
		if rows != len(entries) || versions != len(entries) {
			t.Fatalf("goose_db_version: %d rows of %d versions, want each of the %d migrations once", rows, versions, len(entries))
		}
	})

	t.Run("WaitsForTheLock", func(t *testing.T) {
		// One migration pending (goose takes the lock only then).
		pool, err := db.Open(ctx, direct, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if err := db.MigrateDown(ctx, pool); err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, direct)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		holder, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback(ctx)
		if _, err := holder.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(db.MigrationLockID)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- migrate() }()
		waitForLockAttempt(t, direct)
		select {
		case err := <-done:
			t.Fatalf("migrate returned (%v) while another held the migration lock", err)
		default:
		}
		if err := holder.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("migrate after the lock was released: %v", err)
			}
			var b strings.Builder
			if err := db.MigrationStatus(ctx, pool, &b); err != nil {
				t.Fatal(err)
			}
			// A line per migration, its state last ("applied <when>" or
			// "pending"); a file name may hold the word too.
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.HasSuffix(strings.TrimSpace(line), " pending") {
					t.Fatalf("a migration is still pending:\n%s", b.String())
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatal("migrate did not finish after the lock was released")
		}
	})
}

// waitForLockAttempt waits until sessions of the database of direct have
// tried to take the migration lock and failed at least twice: the migrator
// polls for it in transactions it rolls back (db/locker.go), which the
// database's statistics count (xact_rollback; nothing else in this test's
// database rolls back).
func waitForLockAttempt(t *testing.T, direct string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rollbacks := func() int64 {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rollbacks()
	for ctx.Err() == nil {
		if rollbacks() >= before+2 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no session tried to take the migration lock")
}
