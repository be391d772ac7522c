package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

var serializationFailure = &pgconn.PgError{Code: "40001", Message: "could not serialize access"}

// TestInTxOnATransaction: inside a caller's transaction InTx and Atomic run
// in a savepoint, so a failed operation leaves the caller's transaction
// usable and its own earlier writes in place; only the outermost InTx
// retries a serialization failure.
func TestInTxOnATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	count := func(t *testing.T, tx pgx.Tx, name string) int {
		t.Helper()
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = $1", name).Scan(&n); err != nil {
			t.Fatalf("the caller's transaction is not usable: %v", err)
		}
		return n
	}
	insert := func(q db.DBTX, name string) error {
		_, err := q.Exec(ctx, "INSERT INTO projects (name) VALUES ($1)", name)
		return err
	}
	t.Run("ErrRollsBackToTheSavepoint", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		if err := insert(tx, "nested-a"); err != nil {
			t.Fatal(err)
		}
		err := db.InTx(ctx, tx, func(sp pgx.Tx) error {
			if err := insert(sp, "nested-b"); err != nil {
				return err
			}
			return insert(sp, "nested-a")
		})
		if !errors.Is(err, wgerr.AlreadyExists) {
			t.Fatalf("got %v, want already_exists", err)
		}
		if a, b := count(t, tx, "nested-a"), count(t, tx, "nested-b"); a != 1 || b != 0 {
			t.Fatalf("after the failed savepoint: %d rows a (want 1), %d rows b (want 0)", a, b)
		}
	})
	t.Run("AtomicErr", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		if err := insert(tx, "atomic-a"); err != nil {
			t.Fatal(err)
		}
		err := db.Atomic(ctx, tx, func(q db.DBTX) error { return insert(q, "atomic-a") })
		if !errors.Is(err, wgerr.AlreadyExists) {
			t.Fatalf("got %v, want already_exists", err)
		}
		if n := count(t, tx, "atomic-a"); n != 1 {
			t.Fatalf("%d rows, want 1", n)
		}
	})
	t.Run("RetriesOnlyOutermost", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		for _, c := range []struct {
			name string
			on   db.Beginner
			want int
		}{{"Nested", tx, 1}} {
			runs := 0
			err := db.InTx(ctx, c.on, func(pgx.Tx) error { runs++; return serializationFailure })
			if !errors.Is(err, wgerr.Conflict) {
				t.Fatalf("%s: got %v, want conflict", c.name, err)
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "40001" {
				t.Fatalf("%s: the driver error is not wrapped: %v", c.name, err)
			}
			if runs != c.want {
				t.Fatalf("%s: fn ran %d times, want %d", c.name, runs, c.want)
			}
		}
		// The outermost transaction sees the nested failure and retries
		// the whole operation.
		outer := 0
		pool := dbtest.New(t) // a real transaction of its own, retried
		err := db.InTx(ctx, pool, func(otx pgx.Tx) error {
			outer++
			return db.InTx(ctx, otx, func(pgx.Tx) error { return serializationFailure })
		})
		if !errors.Is(err, wgerr.Conflict) || outer < 2 {
			t.Fatalf("outer ran %d times (%v), want a retry", outer, err)
		}
	})
}

// TestJoin: on a caller's transaction Join runs its step directly in it,
// with no savepoint (a completion's release of dependents costs no extra
// round trips): the step's writes are the caller's, and a failed step
// aborts the caller's transaction. On a pool it is a transaction of its own.
func TestJoin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OKStepOfTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		var inner pgx.Tx
		if err := db.Join(ctx, tx, func(step pgx.Tx) error {
			inner = step
			_, err := step.Exec(ctx, "INSERT INTO projects (name) VALUES ('joined')")
			return err
		}); err != nil {
			t.Fatalf("Join: %v", err)
		}
		if inner != tx {
			t.Fatalf("Join ran its step on %T %p, want the caller's transaction %p (no savepoint)", inner, inner, tx)
		}
	})
	t.Run("ErrAbortsTheCaller", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		err := db.Join(ctx, tx, func(step pgx.Tx) error {
			_, err := step.Exec(ctx, "SELECT 1/0")
			return err
		})
		if err == nil {
			t.Fatal("Join: the failing step's error was lost")
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT 1").Scan(&n); err == nil {
			t.Fatal("the caller's transaction is still usable after a failed step: Join ran it in a savepoint")
		}
	})
	t.Run("OKOnAPool", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.New(t)
		if err := db.Join(ctx, pool, func(step pgx.Tx) error {
			_, err := step.Exec(ctx, "INSERT INTO projects (name) VALUES ('on-a-pool')")
			return err
		}); err != nil {
			t.Fatalf("Join: %v", err)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM projects WHERE name = 'on-a-pool'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("committed rows %d (%v), want 1", n, err)
		}
	})
}
