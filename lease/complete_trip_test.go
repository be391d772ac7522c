package lease_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestCompletionIsOneRoundTrip: a completion without usage or a
// before-commit hook is one pipelined batch (the ending statement and the
// release of dependents and parent) that releases exactly as the
// transaction did; a completion whose fence does not hold changes nothing.
// A database of its own: the counted pool must see the fixture's committed
// items.
func TestCompletionIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxActivePerToken: 1000})
	leases, c := countingLeases(t, f)
	counters := func(t *testing.T, id uuid.UUID) (unmet, children int) {
		t.Helper()
		err := f.pool.QueryRow(f.ctx, `SELECT unmet_dependencies, open_children FROM items WHERE project_id = $1 AND id = $2`,
			f.project, id).Scan(&unmet, &children)
		if err != nil {
			t.Fatal(err)
		}
		return unmet, children
	}
	claim := func(t *testing.T, want uuid.UUID) lease.Claim {
		t.Helper()
		got, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Item.ID != want {
			t.Fatalf("claimed %s, want %s", got.Item.ID, want)
		}
		return got
	}
	// One completion first, so the connection has prepared the statements
	// (their first batch also prepares them).
	warm := f.item(t, graph.NewItem{Title: "warm-up", Priority: 10})
	if _, err := leases.Complete(f.ctx, f.project, fence(claim(t, warm.ID).Lease), nil, nil); err != nil {
		t.Fatal(err)
	}

	parent := f.item(t, graph.NewItem{Title: "parent"})
	child := f.item(t, graph.NewItem{Title: "child", ParentID: &parent.ID, Priority: 5})
	second := f.item(t, graph.NewItem{Title: "second child", ParentID: &parent.ID, DependsOn: []uuid.UUID{child.ID}})
	other := f.item(t, graph.NewItem{Title: "dependent", DependsOn: []uuid.UUID{child.ID}})
	held := claim(t, child.ID)

	t.Run("OK", func(t *testing.T) {
		var done lease.Completion
		trips, stmts := c.countedTrips(t, func() (err error) {
			done, err = leases.Complete(f.ctx, f.project, fence(held.Lease), json.RawMessage(`{"n":1}`), nil)
			return err
		})
		if trips != 1 || stmts != 2 {
			t.Errorf("completion took %d round trips and %d statements, want 1 and 2 (EndLease, ReleaseCompletedLease in one batch)", trips, stmts)
		}
		if done.Item.State != graph.StateDone || string(done.Item.Result) != `{"n": 1}` || done.Lease.Outcome == nil ||
			*done.Lease.Outcome != lease.OutcomeCompleted || done.Replayed {
			t.Errorf("completion = %+v", done)
		}
		if stored := f.getItem(t, child.ID); stored.State != graph.StateDone || stored.UpdatedAt != done.Item.UpdatedAt {
			t.Errorf("answered item %+v, stored %+v", done.Item, stored)
		}
		// The second child is both a dependent and a sibling: its parent
		// loses one open child, each dependent one unmet prerequisite.
		if unmet, children := counters(t, parent.ID); unmet != 0 || children != 1 {
			t.Errorf("parent: unmet %d, open children %d; want 0 and 1", unmet, children)
		}
		for _, id := range []uuid.UUID{second.ID, other.ID} {
			if unmet, children := counters(t, id); unmet != 0 || children != 0 {
				t.Errorf("dependent %s: unmet %d, open children %d; want 0 and 0", id, unmet, children)
			}
		}
	})

	t.Run("FenceLostChangesNothing", func(t *testing.T) {
		before := []string{f.snapshot(t, child.ID), f.snapshot(t, parent.ID), f.snapshot(t, second.ID), f.snapshot(t, other.ID)}
		stale := lease.Fence{LeaseID: held.Lease.ID, Epoch: held.Lease.Epoch + 1}
		if _, err := leases.Complete(f.ctx, f.project, stale, json.RawMessage(`{"n":1}`), nil); wgerr.CodeOf(err) != wgerr.CodeLeaseLost {
			t.Errorf("completion at a stale epoch: %v, want lease_lost", err)
		}
		// A replay: the fence does not hold either (the lease has ended);
		// the counters must not be released twice.
		again, err := leases.Complete(f.ctx, f.project, fence(held.Lease), json.RawMessage(`{"n":1}`), nil)
		if err != nil || !again.Replayed {
			t.Errorf("replayed completion = %+v, %v; want Replayed", again, err)
		}
		after := []string{f.snapshot(t, child.ID), f.snapshot(t, parent.ID), f.snapshot(t, second.ID), f.snapshot(t, other.ID)}
		for i := range before {
			if before[i] != after[i] {
				t.Errorf("a completion whose fence did not hold changed\n%s\nto\n%s", before[i], after[i])
			}
		}
		f.checkInvariants(t)
	})
}

// TestReleaseIsOneStatement: a release without a before-commit hook is its
// ending statement alone, and one whose fence does not hold changes
// nothing. A database of its own, as TestCompletionIsOneRoundTrip.
func TestReleaseIsOneStatement(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxActivePerToken: 1000})
	leases, c := countingLeases(t, f)
	it := f.item(t, graph.NewItem{Title: "released"})
	held, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1"})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		var got lease.Lease
		trips, stmts := c.countedTrips(t, func() (err error) {
			got, err = leases.Release(f.ctx, f.project, fence(held.Lease), "not mine")
			return err
		})
		if trips != 1 || stmts != 1 {
			t.Errorf("release took %d round trips and %d statements, want 1 and 1", trips, stmts)
		}
		if got.Outcome == nil || *got.Outcome != lease.OutcomeReleased {
			t.Errorf("released lease = %+v", got)
		}
		if stored := f.getItem(t, it.ID); stored.State != graph.StateReady || stored.ActiveLeaseID != nil {
			t.Errorf("released item = %+v, want ready without a lease", stored)
		}
	})

	t.Run("ErrLeaseLost", func(t *testing.T) {
		before := f.snapshot(t, it.ID)
		if _, err := leases.Release(f.ctx, f.project, fence(held.Lease), "again"); wgerr.CodeOf(err) != wgerr.CodeLeaseLost {
			t.Errorf("second release: %v, want lease_lost", err)
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Errorf("a release whose fence did not hold changed\n%s\nto\n%s", before, after)
		}
	})
}
