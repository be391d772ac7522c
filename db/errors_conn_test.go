package db_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestTranslateConnectionLoss provokes real connection-level failures and
// checks that each becomes unavailable (503, retry), never internal.
func TestTranslateConnectionLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	unavailable := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		if got := db.Translate(err); !errors.Is(got, wgerr.Unavailable) {
			t.Fatalf("Translate(%v) = %v (code %s), want unavailable", err, got, wgerr.CodeOf(got))
		}
	}
	// terminate ends the backend of conn from another connection of pool:
	// this test's own connection in this test's own database.
	terminate := func(t *testing.T, pid uint32) {
		t.Helper()
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend: %v %v", ok, err)
		}
	}

	t.Run("TerminatedByAdministrator", func(t *testing.T) {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		terminate(t, conn.Conn().PgConn().PID())
		_, err = conn.Exec(ctx, "SELECT 1")
		unavailable(t, err)
		// The dead connection is closed now: the next use says "conn closed".
		_, err = conn.Exec(ctx, "SELECT 1")
		unavailable(t, err)
	})
	t.Run("KilledMidTransaction", func(t *testing.T) {
		err := db.InTx(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO projects (name) VALUES ('mid-tx')"); err != nil {
				return err
			}
			terminate(t, tx.Conn().PgConn().PID())
			_, err := tx.Exec(ctx, "INSERT INTO projects (name) VALUES ('mid-tx-2')")
			return err
		})
		unavailable(t, err)
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name LIKE 'mid-tx%'").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d projects of the killed transaction (%v), want 0", n, err)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		dead, err := pgxpool.New(ctx, "postgres://postgres@"+addr+"/postgres?connect_timeout=2")
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		_, err = dead.Exec(ctx, "SELECT 1")
		unavailable(t, err)
		unavailable(t, db.InTx(ctx, dead, func(pgx.Tx) error { return nil }))
	})
	t.Run("AcquireTimeout", func(t *testing.T) {
		cfg := pool.Config()
		cfg.MaxConns = 1
		one, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		held, err := one.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err = one.Exec(short, "SELECT 1")
		unavailable(t, err)
	})
	t.Run("ClosedPool", func(t *testing.T) {
		cfg := pool.Config()
		closed, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		closed.Close()
		_, err = closed.Exec(ctx, "SELECT 1")
		unavailable(t, err)
	})
	t.Run("CannotConnectNow", func(t *testing.T) {
		// The server's own refusals while it starts or stops (57P03), and
		// class 08, as PostgreSQL sends them.
		for _, code := range []string{"57P01", "57P02", "57P03", "08006", "08001", "53300"} {
			_, err := pool.Exec(ctx, "DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '"+code+"'; END $$")
			unavailable(t, err)
		}
	})
}
