package lease_test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestClaimAfterBackoff: an item whose retry backoff is pending is never
// granted before its instant, and from that instant it is granted at its
// own priority, before any sweep has returned it to the claim indexes
// (migration 00141: claims read the due front of items_backoff). Two
// claimers claim at once at each step, by the stub clock and by the
// database's; a batch claim takes it first too. A database of its own: the
// claims run concurrently.
func TestClaimAfterBackoff(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"StubClock", "DatabaseClock", "Batch"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setupDB(t, lease.Config{RetryBackoff: time.Minute, MaxRetryBackoff: time.Minute, MaxFailures: 10})
			leases := f.leases
			if name == "DatabaseClock" {
				leases = lease.NewService(f.pool, clock.Database{}, f.cfg)
			}
			failed := f.item(t, graph.NewItem{Title: "failed", Priority: 10})
			lower := make([]graph.Item, 4)
			for i := range lower {
				lower[i] = f.item(t, graph.NewItem{Priority: 5})
			}
			c, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w0"})
			if err != nil || c.Item.ID != failed.ID {
				t.Fatalf("first claim = %v, %v; want the item of priority 10", c.Item.ID, err)
			}
			res, err := leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "downstream down"})
			if err != nil || res.RetryAfter == nil {
				t.Fatalf("Fail = %+v, %v", res, err)
			}
			instant := *res.RetryAfter

			// Before the instant (and after a sweep, which must leave it).
			if name != "DatabaseClock" {
				f.clock.Set(instant.Add(-time.Millisecond))
			}
			if err := leases.ClearDueBackoffs(f.ctx, 100); err != nil {
				t.Fatal(err)
			}
			if got := claimTwo(t, f, leases, name == "Batch"); !sameIDs(got, lower[0].ID, lower[1].ID) {
				t.Fatalf("claims before the backoff's end took %v, want the two first items of priority 5", got)
			}

			// At the instant, with no sweep between: the item is still
			// marked in backoff, and it is the first one granted.
			if name == "DatabaseClock" {
				if _, err := f.pool.Exec(f.ctx, `UPDATE items SET not_before = clock_timestamp() - interval '1 millisecond'
					WHERE project_id = $1 AND id = $2`, f.project, failed.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				f.clock.Set(instant)
			}
			var marked bool
			if err := f.pool.QueryRow(f.ctx, `SELECT in_backoff FROM items WHERE project_id = $1 AND id = $2`,
				f.project, failed.ID).Scan(&marked); err != nil || !marked {
				t.Fatalf("in_backoff = %v, %v; want the item still marked (no sweep ran)", marked, err)
			}
			got := claimTwo(t, f, leases, name == "Batch")
			if !sameIDs(got, failed.ID, lower[2].ID) {
				t.Fatalf("claims at the backoff's end took %v, want the failed item %v (priority 10) and the third of priority 5 %v (the others: %v)",
					got, failed.ID, lower[2].ID, lower)
			}
			if name == "Batch" && got[0] != failed.ID {
				t.Fatalf("the batch granted %v, want the failed item first", got)
			}
		})
	}
}

// TestSweeperClearsDueBackoffs: a sweep returns an item to the claim
// indexes once its backoff has passed, never before, and the item is then
// claimed at its priority.
func TestSweeperClearsDueBackoffs(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{RetryBackoff: time.Minute, MaxRetryBackoff: time.Minute, MaxFailures: 10})
	failed := f.item(t, graph.NewItem{Title: "failed", Priority: 10})
	other := f.item(t, graph.NewItem{Priority: 5})
	c := f.claim(t, "w")
	res, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	sweeper := lease.NewSweeper(f.leases, time.Hour, nil)
	marked := func() bool {
		t.Helper()
		var b bool
		if err := f.conn.QueryRow(f.ctx, `SELECT in_backoff FROM items WHERE project_id = $1 AND id = $2`,
			f.project, failed.ID).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	f.clock.Set(res.RetryAfter.Add(-time.Millisecond))
	if _, err := sweeper.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if !marked() {
		t.Fatal("a sweep before the backoff's end cleared it")
	}
	f.clock.Set(*res.RetryAfter)
	if _, err := sweeper.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if marked() {
		t.Fatal("a sweep at the backoff's end left the item in backoff")
	}
	if got := f.claim(t, "w"); got.Item.ID != failed.ID {
		t.Fatalf("claimed %v, want the failed item %v (priority 10) before %v", got.Item.ID, failed.ID, other.ID)
	}
}

// claimTwo has two claimers claim at once (or, batch, one claim of two)
// and returns the items granted, in grant order for a batch.
func claimTwo(t *testing.T, f fixture, leases *lease.Service, batch bool) []uuid.UUID {
	t.Helper()
	if batch {
		cs, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "wb"}, 2)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uuid.UUID, len(cs))
		for i, c := range cs {
			out[i] = c.Item.ID
		}
		return out
	}
	var mu sync.Mutex
	var out []uuid.UUID
	var wg sync.WaitGroup
	for _, w := range []string{"w1", "w2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: w})
			if err != nil {
				t.Errorf("Claim(%s): %v", w, err)
				return
			}
			mu.Lock()
			out = append(out, c.Item.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// sameIDs says whether got holds exactly want, in any order.
func sameIDs(got []uuid.UUID, want ...uuid.UUID) bool {
	if len(got) != len(want) {
		return false
	}
	a := append([]uuid.UUID(nil), got...)
	b := append([]uuid.UUID(nil), want...)
	less := func(s []uuid.UUID) func(i, j int) bool {
		return func(i, j int) bool { return s[i].String() < s[j].String() }
	}
	sort.Slice(a, less(a))
	sort.Slice(b, less(b))
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
