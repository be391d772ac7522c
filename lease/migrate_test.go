package lease_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestMigration10CarriesOldState runs migration 00010 over state the
// schema before it left: a pending continuity reservation gets the token of
// the lease that asked, and the open requests of an item cancelled before
// are dismissed (its open_attention back to 0). The test must migrate its
// own database down and up, so it cannot share one.
func TestMigration10CarriesOldState(t *testing.T) {
	t.Parallel()
	f := setupFresh(t, lease.Config{}) // migrates the database down and up
	tokenA := uuid.New()
	claim := func(label string, token *uuid.UUID) (lease.Claim, error) {
		return f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{label}, TokenID: token})
	}
	reserved := f.item(t, graph.NewItem{Labels: []string{"reserved"}})
	c, err := claim("reserved", &tokenA)
	if err != nil {
		t.Fatal(err)
	}
	f.ask(t, c.Lease, "q", true) // the reservation is pending until the answer
	cancelled := f.item(t, graph.NewItem{Labels: []string{"cancelled"}})
	c, err = claim("cancelled", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := f.ask(t, c.Lease, "q", true).Request

	if err := db.MigrateDownTo(f.ctx, f.pool, 9); err != nil {
		t.Fatal(err)
	}
	// A cancel before 00010 left the request open.
	if _, err := f.pool.Exec(f.ctx, `UPDATE items SET status = 'cancelled', finished_at = now()
		WHERE project_id = $1 AND id = $2`, f.project, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	f.pool.Reset() // the pool's prepared statements name the old columns
	if err := db.Migrate(f.ctx, f.pool, nil); err != nil {
		t.Fatal(err)
	}
	f.pool.Reset()

	got, err := f.att.Get(f.ctx, f.project, asked.ID)
	if err != nil || got.State != attention.StateDismissed {
		t.Errorf("the cancelled item's request is %v (%v), want dismissed", got.State, err)
	}
	if n := f.counters(t, cancelled.ID); n != 0 {
		t.Errorf("the cancelled item's open_attention = %d, want 0", n)
	}
	reqsPage, err := f.att.ForItem(f.ctx, f.project, reserved.ID, "", 0)
	reqs := reqsPage.Requests
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests = %v, %v", reqs, err)
	}
	f.resolve(t, reqs[0], "a")
	tokenB := uuid.New()
	if _, err := claim("reserved", &tokenB); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("another token got the item reserved before the migration (err %v)", err)
	}
	if c, err := claim("reserved", &tokenA); err != nil || c.Item.ID != reserved.ID {
		t.Fatalf("the token that asked: %v, %v", c.Item.ID, err)
	}
}

// counters is an item's open_attention.
func (f fixture) counters(t testing.TB, id uuid.UUID) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, "SELECT open_attention FROM items WHERE project_id = $1 AND id = $2",
		f.project, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
