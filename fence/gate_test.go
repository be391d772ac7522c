package fence_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/fence"
)

// setupGate migrates the gate's tables into schema "dest" of a database of
// the test's own (the tests commit, as a destination does). A new one
// (dbtest.Fresh): the gate's tables are a schema a reused database must
// not keep.
func setupGate(t *testing.T) (*pgxpool.Pool, *fence.Gate) {
	t.Helper()
	pool := dbtest.Fresh(t)
	ctx := context.Background()
	if err := fence.Migrate(ctx, pool, "dest"); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := fence.Migrate(ctx, pool, "dest"); err != nil {
		t.Fatalf("Migrate again (must be idempotent): %v", err)
	}
	g, err := fence.NewGate("dest")
	if err != nil {
		t.Fatal(err)
	}
	return pool, g
}

// apply runs one destination transaction: admit, then (unless replayed)
// record result and commit. It returns the admission or the refusal.
func apply(t *testing.T, pool *pgxpool.Pool, g *fence.Gate, a fence.Attempt, result string) (fence.Admission, error) {
	t.Helper()
	ctx := context.Background()
	var adm fence.Admission
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		adm, err = g.Admit(ctx, tx, a)
		if err != nil || adm.Replayed {
			return err
		}
		return g.Record(ctx, tx, a, []byte(result))
	})
	return adm, err
}

func mustMark(t *testing.T, pool *pgxpool.Pool, g *fence.Gate, resource string, want fence.Mark) {
	t.Helper()
	got, err := g.Marks(context.Background(), pool, resource)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s: committed mark %+v, want %+v", resource, got, want)
	}
}

func TestGate(t *testing.T) {
	t.Parallel()
	pool, g := setupGate(t)

	t.Run("OK", func(t *testing.T) {
		if _, err := apply(t, pool, g, fence.Attempt{Resource: "ok", Token: 3}, ""); err != nil {
			t.Fatal(err)
		}
		mustMark(t, pool, g, "ok", fence.Mark{HighWater: 3})
	})
	t.Run("ErrStaleToken", func(t *testing.T) {
		if _, err := apply(t, pool, g, fence.Attempt{Resource: "stale", Token: 2}, ""); err != nil {
			t.Fatal(err)
		}
		_, err := apply(t, pool, g, fence.Attempt{Resource: "stale", Token: 1}, "")
		var se *fence.StaleTokenError
		if !errors.Is(err, fence.ErrStaleToken) || !errors.As(err, &se) || se.HighWater != 2 || se.Token != 1 {
			t.Fatalf("token 1 after 2: got %v, want a StaleTokenError at high water 2", err)
		}
		mustMark(t, pool, g, "stale", fence.Mark{HighWater: 2})
	})
	t.Run("EqualAdmitted", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if _, err := apply(t, pool, g, fence.Attempt{Resource: "equal", Token: 2}, ""); err != nil {
				t.Fatalf("attempt %d with the equal token: %v", i+1, err)
			}
		}
		mustMark(t, pool, g, "equal", fence.Mark{HighWater: 2})
	})
	t.Run("Replay", func(t *testing.T) {
		a := fence.Attempt{Resource: "replay", Token: 1, Operation: "op-1", Payload: []byte("add 4")}
		adm, err := apply(t, pool, g, a, "applied")
		if err != nil || adm.Replayed {
			t.Fatalf("first: %+v, %v", adm, err)
		}
		a.Token = 2 // a newer lease replays the same operation
		adm, err = apply(t, pool, g, a, "applied again")
		if err != nil || !adm.Replayed || string(adm.Result) != "applied" {
			t.Fatalf("replay: %+v, %v; want replayed with the stored result", adm, err)
		}
		mustMark(t, pool, g, "replay", fence.Mark{HighWater: 2, Receipts: 1})
	})
	t.Run("ErrOperationConflict", func(t *testing.T) {
		a := fence.Attempt{Resource: "conflict", Token: 1, Operation: "op-1", Payload: []byte("add 4")}
		if _, err := apply(t, pool, g, a, "applied"); err != nil {
			t.Fatal(err)
		}
		a.Token, a.Payload = 2, []byte("add 5")
		_, err := apply(t, pool, g, a, "")
		var ce *fence.OperationConflictError
		if !errors.Is(err, fence.ErrOperationConflict) || !errors.As(err, &ce) || ce.Operation != "op-1" {
			t.Fatalf("changed payload: got %v, want an OperationConflictError", err)
		}
		// The refused transaction rolled back, its raised mark with it.
		mustMark(t, pool, g, "conflict", fence.Mark{HighWater: 1, Receipts: 1})
	})
	t.Run("RollbackLeavesMark", func(t *testing.T) {
		if _, err := apply(t, pool, g, fence.Attempt{Resource: "rollback", Token: 1}, ""); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a := fence.Attempt{Resource: "rollback", Token: 5, Operation: "op", Payload: []byte("x")}
		if _, err := g.Admit(ctx, tx, a); err != nil {
			t.Fatal(err)
		}
		if err := g.Record(ctx, tx, a, []byte("r")); err != nil {
			t.Fatal(err)
		}
		if m, _ := g.Marks(ctx, tx, "rollback"); m.HighWater != 5 {
			t.Fatalf("inside the transaction the mark is %d, want 5", m.HighWater)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		mustMark(t, pool, g, "rollback", fence.Mark{HighWater: 1})
		// And a token below the rolled-back 5 is still admitted.
		if _, err := apply(t, pool, g, fence.Attempt{Resource: "rollback", Token: 2}, ""); err != nil {
			t.Fatalf("token 2 after a rolled-back 5: %v", err)
		}
	})
	t.Run("ErrInvalidAttempt", func(t *testing.T) {
		// Not text PostgreSQL stores (it answered the database's error,
		// which the middleware took for an outage: 503).
		for _, a := range []fence.Attempt{{Token: 1}, {Resource: "r", Token: -1},
			{Resource: "r", Token: 1, Operation: "op-\xff"}, {Resource: "r", Token: 1, Operation: "op\x00"}, {Resource: "r\xff", Token: 1}} {
			if _, err := apply(t, pool, g, a, ""); !errors.Is(err, fence.ErrInvalidAttempt) {
				t.Errorf("%+v: got %v, want ErrInvalidAttempt", a, err)
			}
		}
	})
}

func TestNewGateSchemaName(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "Dest", "a;drop", `x"y`, "1abc"} {
		if _, err := fence.NewGate(s); err == nil {
			t.Errorf("NewGate(%q) accepted a schema that is not a plain identifier", s)
		}
	}
}

// TestGateConcurrentReplays: attempts of one operation racing in separate
// transactions apply it once; the others are replays of it (they wait on
// the resource's row, then see the committed receipt).
func TestGateConcurrentReplays(t *testing.T) {
	t.Parallel()
	pool, g := setupGate(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const racers = 8
	var wg sync.WaitGroup
	errs := make(chan error, racers)
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a := fence.Attempt{Resource: "race", Token: int64(1 + i%2), Operation: "op-1", Payload: []byte("add 1")}
			errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				adm, err := g.Admit(ctx, tx, a)
				if err != nil || adm.Replayed {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO effects VALUES (1)`); err != nil {
					return err
				}
				return g.Record(ctx, tx, a, []byte("done"))
			})
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		// A token 1 that lost the race to a committed 2 is stale; nothing
		// else may fail.
		if err != nil && !errors.Is(err, fence.ErrStaleToken) {
			t.Fatalf("racer: %v", err)
		}
	}
	var applied int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM effects`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	m, err := g.Marks(ctx, pool, "race")
	if err != nil {
		t.Fatal(err)
	}
	if applied != 1 || m.Receipts != 1 || m.HighWater != 2 {
		t.Fatalf("applied %d times, mark %+v; want once, one receipt, high water 2", applied, m)
	}
}
