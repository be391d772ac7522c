package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/idempotency"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// A fresh database per test: the janitor and the holder commit (and the
// holder's renewals run on their own connections).
func setup(t *testing.T) (*pgxpool.Pool, *clock.Stub, idempotency.Request) {
	t.Helper()
	pool := dbtest.New(t)
	clk := clock.NewStub(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	var token uuid.UUID
	err := pool.QueryRow(context.Background(), `
		INSERT INTO tokens (name, role, secret_hash) VALUES ('t', 'admin', sha256('s'::bytea)) RETURNING id`).Scan(&token)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("POST /v1/projects"))
	return pool, clk, idempotency.Request{TokenID: token, Key: "k", Hash: hash[:], Owner: uuid.New()}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStore(t *testing.T) {
	t.Parallel()
	pool, clk, r := setup(t)
	s := idempotency.NewStore(pool, clk)
	ctx := context.Background()

	began, err := s.Begin(ctx, r)
	if err != nil || !began {
		t.Fatalf("Begin = %v, %v", began, err)
	}
	other := r
	other.Owner = uuid.New()
	if began, err := s.Begin(ctx, other); err != nil || began {
		t.Fatalf("second Begin of a live record = %v, %v", began, err)
	}
	rec, err := s.Get(ctx, r.TokenID, r.Key)
	if err != nil || rec.Status != nil || !rec.OwnerAlive || !bytes.Equal(rec.Hash, r.Hash) {
		t.Fatalf("Get = %+v, %v", rec, err)
	}
	if err := s.Finish(ctx, r, 201, "application/json", "", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Get(ctx, r.TokenID, r.Key)
	if err != nil || rec.Status == nil || *rec.Status != 201 || string(rec.Response) != `{}` || *rec.ContentType != "application/json" {
		t.Fatalf("Get after Finish = %+v, %v", rec, err)
	}
	if _, err := s.Get(ctx, r.TokenID, "no-such-key"); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
}

func TestJanitor(t *testing.T) {
	t.Parallel()
	pool, clk, r := setup(t)
	s := idempotency.NewStore(pool, clk)
	ctx := context.Background()
	if _, err := s.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	j := idempotency.NewJanitor(s, time.Hour, nil)
	j.TestSignals.Deleted.Init()
	j.Start(ctx)
	defer j.Stop()
	if n := j.TestSignals.Deleted.Wait(t); n != 0 {
		t.Fatalf("the first run deleted %d live records", n)
	}
	clk.Advance(idempotency.TTL)
	if n := j.RunOnce(ctx); n != 1 {
		t.Fatalf("RunOnce after the TTL deleted %d, want 1", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Fatalf("%d records left", n)
	}
	j.Stop()
	j.Stop()
}

func TestHolderRenews(t *testing.T) {
	t.Parallel()
	pool, clk, r := setup(t)
	s := idempotency.NewStore(pool, clk)
	ctx := context.Background()
	if _, err := s.Begin(ctx, r); err != nil {
		t.Fatal(err)
	}
	// The lock would end at the stub's now + LockFor; move the stub past
	// it, then a renewal (by the stub's clock) must extend it again.
	clk.Advance(idempotency.LockFor)
	h := s.Hold(r, nil)
	h.TestSignals.Renewed.Init()
	h.Start(ctx)
	if err := h.TestSignals.Renewed.Wait(t); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	rec, err := s.Get(ctx, r.TokenID, r.Key)
	if err != nil || !rec.OwnerAlive {
		t.Fatalf("after a renewal the owner is not alive: %+v, %v", rec, err)
	}
}
