package lease_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// blockedCode is the code of a completion refused because its item gained
// unfinished work (a dependency, a child) while it was leased.
const blockedCode = wgerr.Code("blocked")

// blockLeased claims an item, then blocks it as a person would while it is
// leased: a dependency on an open item ("dependency") or an open child
// ("child"). It returns the claim and the unfinished item.
func (f fixture) blockLeased(t testing.TB, how string) (lease.Claim, graph.Item) {
	t.Helper()
	x := f.item(t, graph.NewItem{Title: "x", Priority: 10})
	c := f.claim(t, "w1")
	if c.Item.ID != x.ID {
		t.Fatalf("claimed %s, want %s", c.Item.ID, x.ID)
	}
	var open graph.Item
	switch how {
	case "dependency":
		open = f.item(t, graph.NewItem{Title: "prerequisite", Labels: []string{"later"}})
		if err := f.graph.AddDependency(f.ctx, f.project, x.ID, open.ID, "person"); err != nil {
			t.Fatal(err)
		}
	case "child":
		open = f.item(t, graph.NewItem{Title: "child", ParentID: &x.ID, Labels: []string{"later"}})
	default:
		t.Fatalf("no way %q", how)
	}
	return c, open
}

// checkBlocked checks that err is the blocked refusal naming the
// unfinished item.
func checkBlocked(t testing.TB, err error, open graph.Item) {
	t.Helper()
	if wgerr.CodeOf(err) != blockedCode {
		t.Fatalf("completion: %v, want %s", err, blockedCode)
	}
	var we *wgerr.Error
	if !errors.As(err, &we) {
		t.Fatalf("completion: %T, want *wgerr.Error", err)
	}
	named := false
	for _, key := range []string{"dependencies", "children"} {
		if ids, ok := we.Details[key].([]uuid.UUID); ok {
			for _, id := range ids {
				named = named || id == open.ID
			}
		}
	}
	if !named {
		t.Errorf("blocked refusal %q (details %v) does not name the unfinished item %s", we.Message, we.Details, open.ID)
	}
}

// TestCompleteBlocked: a worker whose item gained a dependency on an open
// item, or an open child, while it held the lease cannot complete it: the
// completion is refused as blocked, changes nothing (the item stays open,
// its dependents stay blocked), and the lease stays live, so the worker
// can still heartbeat, release or fail it; once the work is finished the
// same lease completes.
func TestCompleteBlocked(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"dependency", "child"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()

			t.Run("Refused", func(t *testing.T) {
				t.Parallel()
				f := setup(t, lease.Config{})
				c, open := f.blockLeased(t, how)
				after := f.item(t, graph.NewItem{Title: "dependent", DependsOn: []uuid.UUID{c.Item.ID}})
				before := f.snapshot(t, c.Item.ID)
				_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{"ok":true}`), nil)
				checkBlocked(t, err, open)
				if got := f.snapshot(t, c.Item.ID); got != before {
					t.Errorf("a refused completion changed the item or its leases:\nbefore %s\nafter  %s", before, got)
				}
				if st := f.getItem(t, after.ID).State; st != graph.StateBlocked {
					t.Errorf("the dependent of the refused item is %s, want blocked", st)
				}
				if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(c.Lease), lease.Heartbeat{}); err != nil {
					t.Errorf("heartbeat after the refusal: %v", err)
				}
				// Once the unfinished item is done, the same lease completes.
				if _, err := f.graph.Finish(f.ctx, f.project, open.ID, nil); err != nil {
					t.Fatal(err)
				}
				done, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{"ok":true}`), nil)
				if err != nil || done.Item.State != graph.StateDone {
					t.Fatalf("completion once unblocked: %v, %+v", err, done.Item)
				}
				f.checkInvariants(t)
			})

			t.Run("WithUsage", func(t *testing.T) {
				t.Parallel()
				f := setup(t, lease.Config{})
				c, open := f.blockLeased(t, how)
				before := f.snapshot(t, c.Item.ID)
				_, err := f.leases.CompleteWithUsage(f.ctx, f.project, fence(c.Lease), nil, nil, lease.Usage{TokensIn: 10})
				checkBlocked(t, err, open)
				if got := f.snapshot(t, c.Item.ID); got != before {
					t.Errorf("a refused completion changed the item or its leases:\nbefore %s\nafter  %s", before, got)
				}
			})

			t.Run("Release", func(t *testing.T) {
				t.Parallel()
				f := setup(t, lease.Config{})
				c, open := f.blockLeased(t, how)
				_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
				checkBlocked(t, err, open)
				l, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "blocked")
				if err != nil || l.Outcome == nil || *l.Outcome != lease.OutcomeReleased {
					t.Fatalf("release of the blocked lease: %v, %+v", err, l)
				}
				if st := f.getItem(t, c.Item.ID).State; st != graph.StateBlocked {
					t.Errorf("released item is %s, want blocked", st)
				}
				f.checkInvariants(t)
			})

			t.Run("Fail", func(t *testing.T) {
				t.Parallel()
				f := setup(t, lease.Config{})
				c, open := f.blockLeased(t, how)
				_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
				checkBlocked(t, err, open)
				r, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "cannot finish"})
				if err != nil || r.Lease.Outcome == nil || *r.Lease.Outcome != lease.OutcomeFailed {
					t.Fatalf("failure of the blocked lease: %v, %+v", err, r.Lease)
				}
				f.checkInvariants(t)
			})

			t.Run("Pipelined", func(t *testing.T) {
				t.Parallel()
				f := setupDB(t, lease.Config{}) // the one-round-trip path runs on a pool only
				c, open := f.blockLeased(t, how)
				before := f.snapshot(t, c.Item.ID)
				_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
				checkBlocked(t, err, open)
				if got := f.snapshot(t, c.Item.ID); got != before {
					t.Errorf("a refused completion changed the item or its leases:\nbefore %s\nafter  %s", before, got)
				}
				if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "blocked"); err != nil {
					t.Errorf("release after the refusal: %v", err)
				}
			})

			t.Run("Batch", func(t *testing.T) {
				t.Parallel()
				f := setupDB(t, lease.Config{}) // the one-round-trip batch runs on a pool only
				c, open := f.blockLeased(t, how)
				f.item(t, graph.NewItem{Title: "free", Priority: 5})
				free := f.claim(t, "w1")
				before := f.snapshot(t, c.Item.ID)
				answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{
					{Fence: fence(c.Lease)}, {Fence: fence(free.Lease)},
				})
				if err != nil {
					t.Fatal(err)
				}
				checkBlocked(t, answers[0].Err, open)
				if answers[1].Err != nil || answers[1].Completion.Item.State != graph.StateDone {
					t.Errorf("the other entry: %v, %+v; want completed", answers[1].Err, answers[1].Completion.Item)
				}
				if got := f.snapshot(t, c.Item.ID); got != before {
					t.Errorf("a refused entry changed its item or its leases:\nbefore %s\nafter  %s", before, got)
				}
				if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(c.Lease), lease.Heartbeat{}); err != nil {
					t.Errorf("heartbeat after the refusal: %v", err)
				}
			})
		})
	}
}

// TestCompleteBlockedByConcurrentAdd: a dependency added by a transaction
// that holds the item's row when the completion reaches it is seen by the
// completion's statement once that transaction commits (the statement
// re-checks the newest row version under READ COMMITTED), single and
// batch alike. A database of its own: two transactions at once.
func TestCompleteBlockedByConcurrentAdd(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		name := "Single"
		if batch {
			name = "Batch"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setupDB(t, lease.Config{})
			x := f.item(t, graph.NewItem{Title: "x"})
			c := f.claim(t, "w1")
			open := f.item(t, graph.NewItem{Title: "prerequisite", Labels: []string{"later"}})
			tx, err := f.pool.Begin(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(f.ctx)
			if err := graph.NewService(tx, f.clock).AddDependency(f.ctx, f.project, x.ID, open.ID, "person"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				if !batch {
					_, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
					done <- err
					return
				}
				answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{{Fence: fence(c.Lease)}})
				if err == nil {
					err = answers[0].Err
				}
				done <- err
			}()
			// The completion waits for the item's row, which the
			// uncommitted dependency holds; then that commits.
			for waiting := false; !waiting; {
				if err := f.pool.QueryRow(f.ctx, `SELECT count(*) > 0 FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'
					  AND (query LIKE '%EndLease%' OR query LIKE '%CompleteLeases%')`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(f.ctx); err != nil {
				t.Fatal(err)
			}
			checkBlocked(t, <-done, open)
			if it := f.getItem(t, x.ID); it.State != graph.StateLeased || it.ActiveLeaseID == nil || *it.ActiveLeaseID != c.Lease.ID {
				t.Errorf("item after the refused completion: %s (lease %v), want leased by %s", it.State, it.ActiveLeaseID, c.Lease.ID)
			}
			if l := f.getLease(t, c.Lease.ID); l.EndedAt != nil {
				t.Errorf("the lease ended (%v) though its completion was refused", *l.Outcome)
			}
			f.checkInvariants(t)
		})
	}
}

// TestCompleteBlockedAfterExpiry: a completion of a lease that has expired
// (and was not ended yet by the sweeper or a claim) is lease_lost, also
// when its item gained unfinished work meanwhile: blocked says the lease
// is still held, which an expired lease is not. Single (in a transaction
// and pipelined) and batch alike; the lease_lost answer is what the fence
// gives any stale call. Found by TestStateMachine.
func TestCompleteBlockedAfterExpiry(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"InTx", "Pipelined", "Batch"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			var f fixture
			if path == "InTx" {
				f = setup(t, lease.Config{})
			} else {
				f = setupDB(t, lease.Config{}) // the one-round-trip paths run on a pool only
			}
			c, _ := f.blockLeased(t, "dependency")
			f.clock.Advance(ttl) // expires_at <= now: the fence no longer holds
			var err error
			if path == "Batch" {
				answers, berr := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{{Fence: fence(c.Lease)}})
				if berr != nil {
					t.Fatal(berr)
				}
				err = answers[0].Err
			} else {
				_, err = f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil)
			}
			if wgerr.CodeOf(err) != wgerr.CodeLeaseLost {
				t.Fatalf("completion of an expired lease of a blocked item: %v (%s), want %s", err, wgerr.CodeOf(err), wgerr.CodeLeaseLost)
			}
		})
	}
}
