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

// TestBatchIsOneRoundTrip: with no lease of the project due and the token
// far from its limit, a batch claim is one statement (no transaction
// around it, no read of the items after it) that answers each item as the
// claim left it; a batch completion is one round trip (the ending
// statement and the release of dependents and parents pipelined) that
// answers each item as it ended, releases what the entries it completed
// block, and nothing again for an entry already completed. A database of
// its own: the counted pool must see the fixture's committed items.
func TestBatchIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxActivePerToken: 1000})
	leases, c := countingLeases(t, f)
	token := uuid.New()
	req := lease.ClaimRequest{Worker: "w1", TokenID: &token}

	parent := f.item(t, graph.NewItem{Title: "parent", Priority: -5})
	a := f.item(t, graph.NewItem{Title: "a", Priority: 3, ParentID: &parent.ID})
	b := f.item(t, graph.NewItem{Title: "b", Priority: 2, ParentID: &parent.ID})
	other := f.item(t, graph.NewItem{Title: "other", Priority: 1})
	open := f.item(t, graph.NewItem{Title: "open prerequisite", Priority: -9, Labels: []string{"later"}})
	// Blocked by a alone; by a and open (which stays open).
	dep := f.item(t, graph.NewItem{Title: "dep", DependsOn: []uuid.UUID{a.ID}})
	both := f.item(t, graph.NewItem{Title: "both", DependsOn: []uuid.UUID{a.ID, open.ID}})

	var cs []lease.Claim
	t.Run("Claim", func(t *testing.T) {
		n := c.counted(t, func() (err error) {
			cs, err = leases.ClaimBatch(f.ctx, f.project, req, 2)
			return err
		})
		if n != 1 {
			t.Errorf("batch claim sent %d statements, want 1", n)
		}
		if len(cs) != 2 || cs[0].Item.ID != a.ID || cs[1].Item.ID != b.ID {
			t.Fatalf("granted %d claims, want a then b", len(cs))
		}
		for _, cl := range cs {
			stored := f.getItem(t, cl.Item.ID)
			if cl.Item.State != graph.StateLeased || cl.Item.Epoch != 1 || cl.Item.ActiveLeaseID == nil ||
				*cl.Item.ActiveLeaseID != cl.Lease.ID || cl.Item.Title != stored.Title ||
				!cl.Item.UpdatedAt.Equal(stored.UpdatedAt) || stored.State != graph.StateLeased {
				t.Errorf("claimed item %+v, stored %+v", cl.Item, stored)
			}
		}
	})

	t.Run("Complete", func(t *testing.T) {
		var answers []lease.CompletionAnswer
		trips, stmts := c.countedTrips(t, func() (err error) {
			answers, err = leases.CompleteBatch(f.ctx, f.project, &token, completions(cs, `{"ok":true}`))
			return err
		})
		if trips != 1 || stmts != 2 {
			t.Errorf("batch completion took %d round trips and %d statements, want 1 and 2", trips, stmts)
		}
		for i, an := range answers {
			if an.Err != nil {
				t.Fatalf("entry %d: %v", i, an.Err)
			}
			stored := f.getItem(t, cs[i].Item.ID)
			if an.Completion.Item.State != graph.StateDone || string(an.Completion.Item.Result) != `{"ok": true}` ||
				!an.Completion.Item.UpdatedAt.Equal(stored.UpdatedAt) || stored.State != graph.StateDone {
				t.Errorf("entry %d answered item %+v, stored %+v", i, an.Completion.Item, stored)
			}
		}
		if got := f.getItem(t, dep.ID).State; got != graph.StateReady {
			t.Errorf("dependent of a is %s, want ready", got)
		}
		if got := f.getItem(t, both.ID); got.State != graph.StateBlocked || len(got.BlockedBy.Dependencies) != 1 {
			t.Errorf("dependent of a and an open item is %s blocked by %+v, want blocked by that one", got.State, got.BlockedBy)
		}
		if got := f.getItem(t, parent.ID).State; got != graph.StateReady {
			t.Errorf("parent is %s, want ready once both children are done", got)
		}
	})

	t.Run("ReplayReleasesNothingAgain", func(t *testing.T) {
		// other's lease and a's again (a replay) in one batch: a's
		// dependents were released once; "both" still waits for open.
		more, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", TokenID: &token}, 1)
		if err != nil || len(more) != 1 || more[0].Item.ID != other.ID {
			t.Fatalf("claim of other: %v, %d claims", err, len(more))
		}
		before := f.snapshot(t, both.ID)
		entries := completions([]lease.Claim{cs[0], more[0]}, `{"ok":true}`)
		answers, err := leases.CompleteBatch(f.ctx, f.project, &token, entries)
		if err != nil {
			t.Fatal(err)
		}
		if answers[0].Err != nil || !answers[0].Completion.Replayed {
			t.Errorf("replayed entry: %v replayed=%v, want a replay", answers[0].Err, answers[0].Completion.Replayed)
		}
		if answers[1].Err != nil || answers[1].Completion.Item.State != graph.StateDone {
			t.Errorf("new entry: %v %+v", answers[1].Err, answers[1].Completion.Item)
		}
		if after := f.snapshot(t, both.ID); after != before {
			t.Errorf("a replay released a's dependents again:\n%s\n%s", before, after)
		}
	})

	t.Run("DueLeaseReapedFirst", func(t *testing.T) {
		// A lease past its expiry sends the batch through the transaction
		// that ends it first: the abandoned item is handed out again.
		held, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "gone"}, 1)
		if err != nil || len(held) != 1 || held[0].Item.ID != dep.ID {
			t.Fatalf("claim of dep: %v, %d claims", err, len(held))
		}
		f.clock.Advance(2 * ttl)
		var got []lease.Claim
		n := c.counted(t, func() (err error) {
			got, err = leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w2", Labels: []string{}}, 5)
			return err
		})
		if n <= 2 {
			t.Errorf("batch claim with a due lease sent %d statements, want the reaping transaction", n)
		}
		if len(got) == 0 || got[0].Item.ID != dep.ID || got[0].Lease.Epoch != 2 {
			t.Fatalf("claimed %+v, want the abandoned dep at epoch 2 first", got)
		}
		if l := f.getLease(t, held[0].Lease.ID); l.Outcome == nil || *l.Outcome != lease.OutcomeExpired {
			t.Errorf("the abandoned lease ended %v, want expired", l.Outcome)
		}
	})

	t.Run("NothingToClaim", func(t *testing.T) {
		n := c.counted(t, func() error {
			_, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{"absent"}}, 5)
			if !errors.Is(err, lease.ErrNothingReady) {
				t.Errorf("batch of an absent label: %v, want ErrNothingReady", err)
			}
			return nil
		})
		if n > 2 {
			t.Errorf("batch claim that found nothing sent %d statements, want at most 2 (ClaimItems, ClaimNeedsTx)", n)
		}
	})
}

// TestBatchCompletionItemMoved: an item that changes under a pipelined
// batch completion after the statement checked its fence (another
// transaction holds the item's row and finishes it without touching the
// lease) fails the statement, so no lease ends without its item; sent
// again, that entry is lost on its own and the others complete. A database
// of its own: the item's row is held by a second, committed transaction.
func TestBatchCompletionItemMoved(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	leases, _ := countingLeases(t, f)
	f.items(t, 2)
	cs, err := leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 2)
	if err != nil || len(cs) != 2 {
		t.Fatalf("claim: %v, %d claims", err, len(cs))
	}
	moved := cs[1]
	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(f.ctx)
	if _, err := tx.Exec(f.ctx, `UPDATE items SET status = 'cancelled', active_lease_id = NULL, finished_at = now()
		WHERE project_id = $1 AND id = $2`, f.project, moved.Item.ID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		answers []lease.CompletionAnswer
		err     error
	}
	done := make(chan result, 1)
	go func() {
		answers, err := leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, `"r"`))
		done <- result{answers, err}
	}()
	// The completion waits for the item's row lock (its lease already
	// ended, uncommitted), then the holder commits.
	for waiting := false; !waiting; {
		if err := f.pool.QueryRow(f.ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%CompleteLeases%'`).
			Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.answers[0].Err != nil || r.answers[0].Completion.Item.State != graph.StateDone {
		t.Errorf("untouched entry: %v %+v, want completed", r.answers[0].Err, r.answers[0].Completion.Item)
	}
	if wgerr.CodeOf(r.answers[1].Err) != wgerr.CodeLeaseLost {
		t.Errorf("moved entry: %v, want lease_lost", r.answers[1].Err)
	}
	if l := f.getLease(t, moved.Lease.ID); l.EndedAt != nil {
		t.Errorf("the moved item's lease ended (%v) without its item", *l.Outcome)
	}
	var results []json.RawMessage
	if err := f.pool.QueryRow(f.ctx, `SELECT array_agg(result ORDER BY id) FROM items
		WHERE project_id = $1 AND status = 'done'`, f.project).Scan(&results); err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Errorf("%d items done, want 1", len(results))
	}
}
