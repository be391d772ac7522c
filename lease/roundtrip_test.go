package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// statementCounter counts the statements a connection sends one by one
// (BEGIN and COMMIT included; Alone), the statements of its pipelined
// batches (Batched) and its round trips (Trips: a statement sent alone or
// a batch, once the connection has prepared the statements).
type statementCounter struct{ db.StatementCounter }

// countedTrips runs fn and returns its round trips and the statements it
// sent (alone or batched).
func (c *statementCounter) countedTrips(t testing.TB, fn func() error) (trips, stmts int64) {
	t.Helper()
	n0, trips0 := c.Counts()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	n1, trips1 := c.Counts()
	return trips1 - trips0, n1 - n0
}

// counted runs fn and returns how many statements it sent.
func (c *statementCounter) counted(t testing.TB, fn func() error) int64 {
	t.Helper()
	before := c.Alone.Load()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	return c.Alone.Load() - before
}

// countingLeases is a lease service like f's on a one-connection pool of
// f's database whose statements are counted.
func countingLeases(t testing.TB, f fixture) (*lease.Service, *statementCounter) {
	t.Helper()
	cfg := f.pool.Config().Copy()
	cfg.MaxConns = 1
	c := &statementCounter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(f.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return lease.NewService(pool, f.clock, f.cfg), c
}

// TestClaimIsOneStatement: with no lease of the project due, a claim is one
// statement (no transaction around it) and answers the item as it stands
// after the claim; a completion of an item with no dependents answers the
// done item without reading it back. A database of its own: the counted
// connection must see the fixture's committed items.
func TestClaimIsOneStatement(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxActivePerToken: 1000})
	leases, c := countingLeases(t, f)
	it := f.item(t, graph.NewItem{Title: "one trip", Labels: []string{"go"}})
	token := uuid.New()

	t.Run("OK", func(t *testing.T) {
		var got lease.Claim
		n := c.counted(t, func() (err error) {
			got, err = leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", TokenID: &token, Labels: []string{"go"}})
			return err
		})
		if n != 1 {
			t.Errorf("claim sent %d statements, want 1", n)
		}
		if got.Item.ID != it.ID || got.Item.State != graph.StateLeased || got.Item.Epoch != 1 ||
			got.Item.ActiveLeaseID == nil || *got.Item.ActiveLeaseID != got.Lease.ID || got.Item.Title != "one trip" {
			t.Errorf("claimed item = %+v, want %s leased at epoch 1 by lease %s", got.Item, it.ID, got.Lease.ID)
		}
		if stored := f.getItem(t, it.ID); stored.UpdatedAt != got.Item.UpdatedAt || stored.State != got.Item.State {
			t.Errorf("answered item %+v, stored %+v", got.Item, stored)
		}
		var done lease.Completion
		n = c.counted(t, func() (err error) {
			done, err = leases.Complete(f.ctx, f.project, fence(got.Lease), json.RawMessage(`{"ok":true}`), nil)
			return err
		})
		if n > 4 {
			t.Errorf("completion sent %d statements, want at most 4 (BEGIN, EndLease, ReleaseDependents, COMMIT)", n)
		}
		if done.Item.State != graph.StateDone || string(done.Item.Result) != `{"ok": true}` {
			t.Errorf("completed item = %+v", done.Item)
		}
		if stored := f.getItem(t, it.ID); stored.State != graph.StateDone || stored.UpdatedAt != done.Item.UpdatedAt {
			t.Errorf("answered item %+v, stored %+v", done.Item, stored)
		}
	})

	t.Run("NothingToClaim", func(t *testing.T) {
		// Nothing matches and no guard holds the claim back: the answer
		// comes from the claim and one read, not the reaping transaction.
		n := c.counted(t, func() error {
			_, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", TokenID: &token, Labels: []string{"absent"}})
			if !errors.Is(err, lease.ErrNothingReady) {
				return fmt.Errorf("claim of an absent label: %v, want ErrNothingReady", err)
			}
			return nil
		})
		if n > 2 {
			t.Errorf("claim that found nothing sent %d statements, want at most 2 (ClaimItemDirect, ClaimNeedsTx)", n)
		}
	})

	t.Run("DueLeaseReapedFirst", func(t *testing.T) {
		// A lease past its expiry sends the claim through the transaction
		// that ends it first: the abandoned item is the one handed out.
		abandoned := f.item(t, graph.NewItem{Title: "abandoned", Priority: -1})
		held := f.claim(t, "gone")
		if held.Item.ID != abandoned.ID {
			t.Fatalf("claimed %s, want %s", held.Item.ID, abandoned.ID)
		}
		f.clock.Advance(2 * ttl)
		var got lease.Claim
		n := c.counted(t, func() (err error) {
			got, err = leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"})
			return err
		})
		if n <= 1 {
			t.Errorf("claim with a due lease sent %d statements, want the reaping transaction", n)
		}
		if got.Item.ID != abandoned.ID || got.Lease.Epoch != 2 {
			t.Errorf("claimed %s epoch %d, want the abandoned %s at epoch 2", got.Item.ID, got.Lease.Epoch, abandoned.ID)
		}
		if l := f.getLease(t, held.Lease.ID); l.Outcome == nil || *l.Outcome != lease.OutcomeExpired {
			t.Errorf("the due lease = %+v, want ended as expired", l)
		}
	})

	t.Run("NearTheTokenLimit", func(t *testing.T) {
		// Within the slack of the token's limit the claim counts under the
		// token's lock, in a transaction.
		near, c2 := countingLeases(t, fixture{ctx: f.ctx, pool: f.pool, clock: f.clock, cfg: lease.Config{DefaultTTL: ttl, MaxActivePerToken: 2}})
		f.item(t, graph.NewItem{Title: "limited"})
		n := c2.counted(t, func() error {
			_, err := near.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w3", TokenID: &token})
			return err
		})
		if n <= 1 {
			t.Errorf("claim near the token's limit sent %d statements, want the counting transaction", n)
		}
	})

	t.Run("WithTouches", func(t *testing.T) {
		// An item with touches is granted by the one statement too (its
		// scope locks and re-check are inside it); an item whose touches
		// overlap the held scope is then not handed out.
		touched := f.item(t, graph.NewItem{Title: "scoped", Labels: []string{"scoped"}, Touches: []string{"repo:web/**"}})
		f.item(t, graph.NewItem{Title: "overlapping", Labels: []string{"scoped"}, Touches: []string{"repo:web/src/**"}})
		var got lease.Claim
		n := c.counted(t, func() (err error) {
			got, err = leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w4", Labels: []string{"scoped"}})
			return err
		})
		if n != 1 {
			t.Errorf("claim of an item with touches sent %d statements, want 1", n)
		}
		if got.Item.ID != touched.ID || !slices.Equal(got.Lease.Scopes, []string{"repo:web/**"}) {
			t.Errorf("claimed %s with scopes %v, want %s with [repo:web/**]", got.Item.ID, got.Lease.Scopes, touched.ID)
		}
		n = c.counted(t, func() error {
			_, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w5", Labels: []string{"scoped"}})
			if !errors.Is(err, lease.ErrNothingReady) {
				return fmt.Errorf("claim of the overlapping item: %v, want ErrNothingReady", err)
			}
			return nil
		})
		if n > 2 {
			t.Errorf("claim that found only an overlapping item sent %d statements, want at most 2", n)
		}
	})

	t.Run("WithCapabilities", func(t *testing.T) {
		// A worker that offers the same capabilities again records them
		// once: its next claim is the one statement again.
		caps := []string{"base", "gpu"}
		for i, want := range []int64{2, 1} {
			f.item(t, graph.NewItem{Title: fmt.Sprintf("needs gpu %d", i), Labels: []string{"gpu"}, Requires: []string{"gpu"}})
			n := c.counted(t, func() error {
				_, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w6", Labels: []string{"gpu"}, Capabilities: caps})
				return err
			})
			if n != want {
				t.Errorf("claim %d with capabilities sent %d statements, want %d", i+1, n, want)
			}
		}
		var offered []string
		if err := f.conn.QueryRow(f.ctx, `SELECT capabilities FROM worker_offers WHERE project_id = $1 AND worker = 'w6'`,
			f.project).Scan(&offered); err != nil || !slices.Equal(offered, caps) {
			t.Errorf("recorded offer %v (%v), want %v", offered, err, caps)
		}
	})
}

// TestBatchClaimUnderFilledIsOneStatement: a batch claim that finds fewer
// ready items than it asks for is still one statement when no item with
// write scopes is ready (those it takes one by one with the single
// claim's statement, lease/batch.go fillScoped: one statement more only
// when there are such items).
func TestBatchClaimUnderFilledIsOneStatement(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	leases, c := countingLeases(t, f)
	for _, title := range []string{"a", "b"} {
		f.item(t, graph.NewItem{Title: title})
	}
	var got []lease.Claim
	n := c.counted(t, func() (err error) {
		got, err = leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 5)
		return err
	})
	if len(got) != 2 {
		t.Fatalf("the batch claimed %d items, want the 2 ready", len(got))
	}
	if n != 1 {
		t.Errorf("an under-filled batch with no scoped item ready sent %d statements, want 1", n)
	}

	// With an item with touches ready, the batch takes it too, in the
	// order of single claims: the older item first, touches or not.
	scoped := f.item(t, graph.NewItem{Title: "scoped", Touches: []string{"repo:web/**"}})
	plain := f.item(t, graph.NewItem{Title: "plain"})
	got, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Item.ID != scoped.ID || got[1].Item.ID != plain.ID {
		t.Fatalf("the batch claimed %+v, want the scoped item and then the plain one (claim order)", got)
	}
}
