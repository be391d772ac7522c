package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// heldMarks is how many items of the project are marked scope_held
// (migration 00167): left out of the claim indexes.
func (f fixture) heldMarks(t testing.TB) int {
	t.Helper()
	var n int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND scope_held`, f.project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// heldSetup: a holder item whose lease holds repo:web/** and three ready
// items whose touches overlap it (so they are marked held), at a priority
// above the holder's once it is leased, so that the first claim after the
// lease ends takes one of them if it is claimable.
func heldSetup(t *testing.T) (fixture, lease.Claim, map[uuid.UUID]bool) {
	t.Helper()
	f := setup(t, lease.Config{MaxExpiries: 1000, MaxFailures: 1000})
	holder := f.item(t, graph.NewItem{Title: "holder", Priority: 9, Touches: []string{"repo:web/**"}})
	held := map[uuid.UUID]bool{}
	for _, touches := range [][]string{{"repo:web/src/x.go"}, {"repo:**/*.md"}, {"repo"}} {
		held[f.item(t, graph.NewItem{Title: "held", Priority: 5, Touches: touches}).ID] = true
	}
	c := f.claim(t, "holder")
	if c.Item.ID != holder.ID {
		t.Fatalf("claimed %s, want the holder", c.Item.Title)
	}
	if n := f.heldMarks(t); n != 3 {
		t.Fatalf("%d items marked held after the grant, want 3", n)
	}
	// The holder, once back in circulation, comes after the held items.
	if _, err := f.conn.Exec(f.ctx, `UPDATE items SET priority = 0 WHERE project_id = $1 AND id = $2`, f.project, holder.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim beside the holder: %v, want ErrNothingReady", err)
	}
	return f, c, held
}

// TestHeldItemsClaimableWhenTheLeaseEnds: items whose touches overlap a
// live lease's scopes are marked held when it is granted and left out of
// the claim indexes (migration 00167); however the lease ends, they are
// claimable at once, with no sweep: the very next claim takes one. Each
// way a lease ends is a subtest. (Before the marks were cleared at the
// end, every one of them answered ErrNothingReady.)
func TestHeldItemsClaimableWhenTheLeaseEnds(t *testing.T) {
	t.Parallel()
	ends := map[string]func(t *testing.T, f fixture, c lease.Claim){
		"Complete": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err != nil {
				t.Fatal(err)
			}
		},
		"CompleteBatch": func(t *testing.T, f fixture, c lease.Claim) {
			answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{{Fence: fence(c.Lease), Result: json.RawMessage(`{}`)}})
			if err != nil || len(answers) != 1 || answers[0].Err != nil {
				t.Fatalf("CompleteBatch = %+v, %v", answers, err)
			}
		},
		"Fail": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "broken"}); err != nil {
				t.Fatal(err)
			}
		},
		"Release": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "later"); err != nil {
				t.Fatal(err)
			}
		},
		"ExpiryReapedByClaim": func(t *testing.T, f fixture, c lease.Claim) {
			f.clock.Advance(ttl + time.Second) // the next claim reaps it
		},
		"ExpiryReapedBySweep": func(t *testing.T, f fixture, c lease.Claim) {
			f.clock.Advance(ttl + time.Second)
			if n, err := f.leases.ReapExpired(f.ctx, f.project, 10); err != nil || n != 1 {
				t.Fatalf("ReapExpired = %d, %v, want 1", n, err)
			}
		},
		"Attention": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.leases.Ask(f.ctx, f.project, fence(c.Lease), attention.NewRequest{Question: "which?", Blocking: true}); err != nil {
				t.Fatal(err)
			}
		},
		"Decompose": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.leases.Decompose(f.ctx, f.project, fence(c.Lease), []graph.NewChild{{Key: "k", Title: "child", Priority: -1}}); err != nil {
				t.Fatal(err)
			}
		},
		"Cancel": func(t *testing.T, f fixture, c lease.Claim) {
			if _, err := f.graph.Cancel(f.ctx, f.project, c.Item.ID, "person:p", "no longer needed"); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, c, held := heldSetup(t)
			end(t, f, c)
			got := f.claim(t, "w")
			if !held[got.Item.ID] {
				t.Fatalf("after the holder's lease ended, the claim took %s, want a held item", got.Item.Title)
			}
		})
	}

	// Takeover: the holder's lease expires and the claim that reaps it
	// takes the holder again (first in claim order), in one transaction:
	// its new lease holds the same items, which stay out of reach, until
	// it ends.
	t.Run("Takeover", func(t *testing.T) {
		t.Parallel()
		f, c, held := heldSetup(t)
		if _, err := f.conn.Exec(f.ctx, `UPDATE items SET priority = 9 WHERE project_id = $1 AND id = $2`, f.project, c.Item.ID); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(ttl + time.Second)
		again := f.claim(t, "taker")
		if again.Item.ID != c.Item.ID {
			t.Fatalf("the claim after the expiry took %s, want the holder", again.Item.Title)
		}
		if n := f.heldMarks(t); n != 3 {
			t.Fatalf("%d items marked held under the new lease, want 3", n)
		}
		if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("claim beside the new lease: %v, want ErrNothingReady", err)
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(again.Lease), json.RawMessage(`{}`), nil); err != nil {
			t.Fatal(err)
		}
		if got := f.claim(t, "w"); !held[got.Item.ID] {
			t.Fatalf("after the new lease ended, the claim took %s, want a held item", got.Item.Title)
		}
	})
}

// TestHeldItemStaysHeldWhileAnotherLeaseHoldsIt: an item whose touches
// overlap two live leases (of scopes that do not overlap each other) stays
// out of reach when one of them ends, and is claimable the moment the
// other ends too.
func TestHeldItemStaysHeldWhileAnotherLeaseHoldsIt(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	a := f.item(t, graph.NewItem{Title: "a", Priority: 9, Touches: []string{"repo:web/**"}})
	b := f.item(t, graph.NewItem{Title: "b", Priority: 8, Touches: []string{"repo:api/**"}})
	both := f.item(t, graph.NewItem{Title: "both", Priority: 5, Touches: []string{"repo:web/x.go", "repo:api/y.go"}})
	ca, cb := f.claim(t, "wa"), f.claim(t, "wb")
	if ca.Item.ID != a.ID || cb.Item.ID != b.ID {
		t.Fatalf("claimed %s and %s, want a and b", ca.Item.Title, cb.Item.Title)
	}
	if n := f.heldMarks(t); n != 1 {
		t.Fatalf("%d items marked held, want 1", n)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, fence(ca.Lease), json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if n := f.heldMarks(t); n != 1 {
		t.Fatalf("%d items marked held while b's lease holds one, want 1", n)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim while b's lease holds the item: %v, want ErrNothingReady", err)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, fence(cb.Lease), json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(t, "w"); got.Item.ID != both.ID {
		t.Fatalf("claimed %s, want both", got.Item.Title)
	}
}

// TestSweepClearsStaleScopeHolds: a mark that no live lease justifies (set
// here by hand, as a missed clear would leave it) hides its item from the
// claim until the sweeper re-judges the marks; one that a live lease
// justifies stays.
func TestSweepClearsStaleScopeHolds(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	holder := f.item(t, graph.NewItem{Title: "holder", Priority: 9, Touches: []string{"repo:web/**"}})
	held := f.item(t, graph.NewItem{Title: "held", Priority: 5, Touches: []string{"repo:web/x.go"}})
	stale := f.item(t, graph.NewItem{Title: "stale", Priority: 1, Touches: []string{"db:x"}})
	if c := f.claim(t, "holder"); c.Item.ID != holder.ID {
		t.Fatalf("claimed %s, want the holder", c.Item.Title)
	}
	if _, err := f.conn.Exec(f.ctx, `UPDATE items SET scope_held = true WHERE project_id = $1 AND id = $2`, f.project, stale.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim before the sweep: %v, want ErrNothingReady (the stale mark hides the item)", err)
	}
	n, err := f.leases.ClearStaleScopeHolds(f.ctx, 100)
	if err != nil || n != 1 {
		t.Fatalf("ClearStaleScopeHolds = %d, %v, want 1", n, err)
	}
	if got := f.claim(t, "w"); got.Item.ID != stale.ID {
		t.Fatalf("claimed %s after the sweep, want stale", got.Item.Title)
	}
	var still bool
	if err := f.conn.QueryRow(f.ctx, `SELECT scope_held FROM items WHERE project_id = $1 AND id = $2`, f.project, held.ID).Scan(&still); err != nil || !still {
		t.Fatalf("held's mark = %v, %v, want kept (the holder's lease is live)", still, err)
	}
}

// TestHeldItemClearedWhenItsHoldersEndAtOnce: an item is held by two live
// leases (of scopes that do not overlap each other) that end in two
// transactions at once. The first ends its lease and judges the item
// still held (the other lease is live) but has not committed; the second
// ends the other lease meanwhile. Were each to judge with what it sees,
// the second would count the first's lease as live too, and the item
// would stay marked with no lease holding it. The second waits for the
// item's row, which the first locked before judging, and judges after
// the first committed: the item is unmarked. (A database of its own: two
// transactions commit concurrently.)
func TestHeldItemClearedWhenItsHoldersEndAtOnce(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	f.item(t, graph.NewItem{Title: "a", Priority: 9, Touches: []string{"repo:web/**"}})
	f.item(t, graph.NewItem{Title: "b", Priority: 8, Touches: []string{"repo:api/**"}})
	both := f.item(t, graph.NewItem{Title: "both", Priority: 5, Touches: []string{"repo:web/x.go", "repo:api/y.go"}})
	ca, cb := f.claim(t, "wa"), f.claim(t, "wb")
	if n := f.heldMarks(t); n != 1 {
		t.Fatalf("%d items marked held, want 1", n)
	}
	q := dbq.New()
	released := string(lease.OutcomeReleased)
	tx1, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(context.WithoutCancel(f.ctx))
	if _, err := q.EndLease(f.ctx, tx1, dbq.EndLeaseParams{
		Outcome: &released, ProjectID: f.project, LeaseID: ca.Lease.ID, Epoch: ca.Lease.Epoch,
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := f.pool.Acquire(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	done := make(chan error, 1)
	go func() {
		_, err := q.EndLease(f.ctx, conn, dbq.EndLeaseParams{
			Outcome: &released, ProjectID: f.project, LeaseID: cb.Lease.ID, Epoch: cb.Lease.Epoch,
		})
		done <- err
	}()
	// The second end is under way: it waits for the item's row (or, were
	// it not to lock it, has ended already).
	var endErr error
	finished := false
	for waiting := false; !waiting && !finished; {
		select {
		case endErr = <-done:
			finished = true
		default:
			if err := f.conn.QueryRow(f.ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1",
				pid).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx1.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if !finished {
		endErr = <-done
	}
	if endErr != nil {
		t.Fatal(endErr)
	}
	var held bool
	if err := f.conn.QueryRow(f.ctx, `SELECT scope_held FROM items WHERE project_id = $1 AND id = $2`, f.project, both.ID).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held {
		t.Fatal("both's holders ended, and it is still marked held")
	}
}

// TestWaitersWokenWhenHeldScopesEnd: the end of a lease that held ready
// items wakes the project's waiting claims (workgraph_ready), though no
// item became ready: before, a claimer waiting for them slept until its
// periodic recheck (Config.WaitRecheck). (A database of its own: it
// LISTENs.)
func TestWaitersWokenWhenHeldScopesEnd(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	n := startNotifier(t, f)
	ch, unsubscribe := n.Subscribe(f.project)
	defer unsubscribe()
	f.item(t, graph.NewItem{Title: "holder", Priority: 9, Touches: []string{"repo:web/**"}})
	f.item(t, graph.NewItem{Title: "held", Priority: 5, Touches: []string{"repo:web/x.go"}})
	c := f.claim(t, "holder")
	if n := f.heldMarks(t); n != 1 {
		t.Fatalf("%d items marked held, want 1", n)
	}
	// Notifications arrive in commit order: once this one for another
	// project is in, those of the items' creation are too.
	other := uuid.New()
	barrier, unsubscribeBarrier := n.Subscribe(other)
	defer unsubscribeBarrier()
	if _, err := f.conn.Exec(f.ctx, `SELECT pg_notify('workgraph_ready', $1)`, other.String()); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, barrier, "the barrier's notification")
	drain(ch)
	if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "the holder's lease ended, and the held item is claimable")
}

// TestScopeHoldsUnderConcurrentClaims: in rounds, 16 claimers commit
// claims, completions and releases concurrently over items whose scopes
// overlap in many ways, six each, then stop. A watcher checks, over and
// over, that no two live leases overlap, and so does each claimer right
// after its claim. After each round no lease is live, so once a sweep has
// unmarked the rows the ends skipped (held by other transactions), no item
// may be marked held. Every item is eventually done. (The races of two
// holders' ends, and of a grant's mark and an end, are
// TestHeldItemClearedWhenItsHoldersEndAtOnce and
// TestHeldItemClearedWhenAGrantRacesAnEnd.)
// (A database of its own: concurrent, committing claims.)
func TestScopeHoldsUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxFailures: 1000, MaxExpiries: 1000})
	scopes := [][]string{
		{"repo"}, {"repo:web/**"}, {"repo:web/src/**"}, {"repo:web/src/*.go"}, {"repo:web/docs/**"},
		{"repo:**/*.md"}, {"repo:api/**"}, {"repo:api/*.go", "db:schema"}, {"db"}, {"db:schema"},
		{"db:data"}, {"cache"}, {"repo:web/src/main.go"}, {"repo:*/src/**"}, {"db:data", "cache:x"},
		{"repo:web/x.go", "repo:api/y.go"}, {"repo:api/z.go", "db:data"},
	}
	const items = 100
	for i := 0; i < items; i++ {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Priority: int32(i % 7), Touches: scopes[i%len(scopes)]})
	}

	var stop atomic.Bool
	var watcher sync.WaitGroup
	watcher.Add(1)
	checks := 0
	go func() {
		defer watcher.Done()
		for !stop.Load() {
			if n, first := overlappingLive(t, f); n > 0 {
				t.Errorf("%d pairs of live leases hold overlapping scopes, e.g. %s", n, first)
				return
			}
			checks++
		}
	}()
	defer func() {
		stop.Store(true)
		watcher.Wait()
		t.Logf("%d checks by the watcher", checks)
	}()

	var done atomic.Int64
	sweptMarks := 0
	defer func() { t.Logf("%d marks left to the sweep", sweptMarks) }()
	for round := 0; done.Load() < items && round < 40; round++ {
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
				worker := fmt.Sprintf("w%d", w)
				for cycles, idle := 0, 0; cycles < 6 && done.Load() < items && idle < 50; {
					c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
					if errors.Is(err, lease.ErrNothingReady) {
						idle++
						time.Sleep(time.Millisecond) // let a holder finish; not a wait for an effect
						continue
					}
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					cycles, idle = cycles+1, 0
					if n, first := overlappingLive(t, f); n > 0 {
						t.Errorf("after a claim, live leases overlap: %s", first)
						return
					}
					// (No failures: their backoff would wait for the stub clock.)
					if rng.IntN(2) == 0 {
						_, err = f.leases.Release(f.ctx, f.project, fence(c.Lease), "again")
					} else if _, err = f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err == nil {
						done.Add(1)
					}
					if err != nil {
						t.Errorf("end: %v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		// An end skips the rows another transaction holds, and a claim's
		// walk can hold one it found marked on its recheck (it keeps the
		// lock): such a mark is the sweep's. After it, no item is marked.
		swept, err := f.leases.ClearStaleScopeHolds(f.ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		sweptMarks += swept
		var live, marked int
		if err := f.conn.QueryRow(f.ctx, `SELECT (SELECT count(*) FROM leases WHERE project_id = $1 AND ended_at IS NULL),
			(SELECT count(*) FROM items WHERE project_id = $1 AND scope_held)`, f.project).Scan(&live, &marked); err != nil {
			t.Fatal(err)
		}
		if live != 0 || marked != 0 {
			t.Fatalf("after round %d and a sweep: %d live leases and %d items marked held, want none", round, live, marked)
		}
	}
	var open int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND status = 'open'`, f.project).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 || done.Load() != items {
		t.Fatalf("%d items still open, %d completed, want 0 and %d", open, done.Load(), items)
	}
}

// TestHeldItemClearedWhenAGrantRacesAnEnd: an item overlaps a live lease
// of scope db that did not mark it (it was created after that grant). A
// grant of scope repo marks it in a transaction not yet committed, while
// the db lease ends in another: that end does not see the mark. The repo
// lease then ends too, before the db lease's end commits. Judged by what
// each sees, the repo end counts the db lease as live and keeps the mark,
// and the db end never saw it: the item would stay marked with no lease
// holding it. The repo end judges under the scope locks of the item's
// touches, which conflict with those the db end holds, so it judges after
// that end committed and unmarks the item. (A database of its own:
// transactions commit concurrently.)
func TestHeldItemClearedWhenAGrantRacesAnEnd(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	f.item(t, graph.NewItem{Title: "db", Priority: 9, Touches: []string{"db"}})
	cdb := f.claim(t, "wdb")
	f.item(t, graph.NewItem{Title: "repo", Priority: 8, Touches: []string{"repo"}})
	item := f.item(t, graph.NewItem{Title: "item", Priority: 1, Touches: []string{"repo:api/z.go", "db:data"}})
	if n := f.heldMarks(t); n != 0 {
		t.Fatalf("%d items marked held, want none (the item came after the db lease's grant)", n)
	}
	q := dbq.New()
	released := string(lease.OutcomeReleased)
	txGrant, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txGrant.Rollback(context.WithoutCancel(f.ctx))
	granted, err := q.ClaimItem(f.ctx, txGrant, dbq.ClaimItemParams{
		ProjectID: f.project, Labels: []string{}, Worker: "wrepo", LeaseID: uuid.New(), Principal: "agent:wrepo", TtlMs: 60000,
	})
	if err != nil {
		t.Fatal(err)
	}
	txEnd, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txEnd.Rollback(context.WithoutCancel(f.ctx))
	if _, err := q.EndLease(f.ctx, txEnd, dbq.EndLeaseParams{
		Outcome: &released, ProjectID: f.project, LeaseID: cdb.Lease.ID, Epoch: cdb.Lease.Epoch,
	}); err != nil {
		t.Fatal(err)
	}
	if err := txGrant.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.heldMarks(t); n != 1 {
		t.Fatalf("%d items marked held after the repo grant, want 1", n)
	}
	conn, err := f.pool.Acquire(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	done := make(chan error, 1)
	go func() {
		_, err := q.EndLease(f.ctx, conn, dbq.EndLeaseParams{
			Outcome: &released, ProjectID: f.project, LeaseID: granted.Lease.ID, Epoch: granted.Lease.Epoch,
		})
		done <- err
	}()
	// The repo end is under way: it waits for the db end's locks (or,
	// were it not to, has ended already).
	var endErr error
	finished := false
	for waiting := false; !waiting && !finished; {
		select {
		case endErr = <-done:
			finished = true
		default:
			if err := f.conn.QueryRow(f.ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1",
				pid).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := txEnd.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if !finished {
		endErr = <-done
	}
	if endErr != nil {
		t.Fatal(endErr)
	}
	var held bool
	if err := f.conn.QueryRow(f.ctx, `SELECT scope_held FROM items WHERE project_id = $1 AND id = $2`, f.project, item.ID).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held {
		t.Fatal("both leases overlapping the item ended, and it is still marked held")
	}
}
