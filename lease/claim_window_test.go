package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// afterDirectClaim runs a function once, right after the first
// ClaimItemDirect statement a connection sends has answered.
type afterDirectClaim struct {
	once sync.Once
	fn   func()
}

type directClaimKey struct{}

func (a *afterDirectClaim) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, directClaimKey{}, strings.Contains(d.SQL, "name: ClaimItemDirect"))
}

func (a *afterDirectClaim) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if direct, _ := ctx.Value(directClaimKey{}).(bool); direct {
		a.once.Do(a.fn)
	}
}

// TestClaimAfterAnInFlightLock: the one-statement claim searches with a
// snapshot later than its UPDATE's (wg_claim_candidate), so a concurrent
// claim can hold a ready item's row lock for an instant without writing
// the item (it committed ready between that claim's two snapshots). A
// claim that skipped the locked row and found nothing else must not answer
// "nothing ready" once the lock is gone and the item is still ready: a
// long-polling worker woken for that item would go back to sleep with the
// item left unclaimed. The lock is held by a transaction of the test,
// released right after the claim's statement answered.
func TestClaimAfterAnInFlightLock(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	it := f.item(t, graph.NewItem{Title: "locked for an instant"})

	holder, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(f.ctx)
	if _, err := holder.Exec(f.ctx, `SELECT 1 FROM items WHERE project_id = $1 AND id = $2 FOR UPDATE`, f.project, it.ID); err != nil {
		t.Fatal(err)
	}

	cfg := f.pool.Config().Copy()
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = &afterDirectClaim{fn: func() {
		if err := holder.Rollback(f.ctx); err != nil {
			t.Error(err)
		}
	}}
	pool, err := pgxpool.NewWithConfig(f.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	leases := lease.NewService(pool, f.clock, f.cfg)

	got, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1"})
	if errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim answered nothing ready with %s ready and unlocked", it.ID)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Item.ID != it.ID {
		t.Errorf("claimed %s, want %s", got.Item.ID, it.ID)
	}
}
