package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func (f fixture) claimBatch(t testing.TB, worker string, max int) []lease.Claim {
	t.Helper()
	cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: worker}, max)
	if err != nil {
		t.Fatalf("ClaimBatch(%s, %d): %v", worker, max, err)
	}
	return cs
}

func completions(cs []lease.Claim, result string) []lease.CompletionEntry {
	out := make([]lease.CompletionEntry, len(cs))
	for i, c := range cs {
		out[i] = lease.CompletionEntry{Fence: fence(c.Lease), Result: json.RawMessage(result)}
	}
	return out
}

func TestClaimBatch(t *testing.T) {
	t.Parallel()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		low := f.item(t, graph.NewItem{Priority: 1})
		high := f.item(t, graph.NewItem{Priority: 9})
		mid := f.items(t, 3)
		cs := f.claimBatch(t, "w", 4)
		if len(cs) != 4 {
			t.Fatalf("granted %d, want 4", len(cs))
		}
		want := []uuid.UUID{high.ID, low.ID, mid[0].ID, mid[1].ID}
		seen := map[uuid.UUID]bool{}
		for i, c := range cs {
			if c.Item.ID != want[i] {
				t.Errorf("claim %d holds %s, want %s (priority, then age)", i, c.Item.ID, want[i])
			}
			if c.Lease.ItemID != c.Item.ID || c.Lease.Epoch != 1 || c.Item.Epoch != 1 || c.Item.State != graph.StateLeased {
				t.Errorf("claim %d: lease %+v item %+v", i, c.Lease, c.Item)
			}
			if c.Item.ActiveLeaseID == nil || *c.Item.ActiveLeaseID != c.Lease.ID || seen[c.Lease.ID] {
				t.Errorf("claim %d: lease id %s not the item's own", i, c.Lease.ID)
			}
			seen[c.Lease.ID] = true
			if got := c.Lease.ExpiresAt.Sub(c.Lease.AcquiredAt); got != ttl {
				t.Errorf("claim %d lasts %s, want %s", i, got, ttl)
			}
		}
		rest := f.claimBatch(t, "w", 4)
		if len(rest) != 1 || rest[0].Item.ID != mid[2].ID {
			t.Fatalf("second batch granted %d, want the last item", len(rest))
		}
		if _, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 4); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("third batch: %v, want ErrNothingReady", err)
		}
		f.checkInvariants(t)
	})

	t.Run("LabelsAndBackoff", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		gpu := f.item(t, graph.NewItem{Labels: []string{"gpu"}})
		f.item(t, graph.NewItem{})
		// A failed item waits for its backoff before any batch takes it.
		failedItem, l := f.claimNew(t, "w")
		if _, err := f.leases.Fail(f.ctx, f.project, fence(l), lease.Failure{Message: "x"}); err != nil {
			t.Fatal(err)
		}
		cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"gpu"}}, 10)
		if err != nil || len(cs) != 1 || cs[0].Item.ID != gpu.ID {
			t.Fatalf("labelled batch: %v, %d claims", err, len(cs))
		}
		cs = f.claimBatch(t, "w", 10)
		for _, c := range cs {
			if c.Item.ID == failedItem.ID {
				t.Fatal("a batch took an item inside its retry backoff")
			}
		}
		if len(cs) != 1 {
			t.Fatalf("granted %d, want 1", len(cs))
		}
	})

	t.Run("TokenLimit", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{MaxActivePerToken: 3})
		f.items(t, 5)
		token := uuid.New()
		req := lease.ClaimRequest{Worker: "w", TokenID: &token}
		cs, err := f.leases.ClaimBatch(f.ctx, f.project, req, 5)
		if err != nil || len(cs) != 3 {
			t.Fatalf("batch of 5 under a limit of 3: %v, %d claims", err, len(cs))
		}
		_, err = f.leases.ClaimBatch(f.ctx, f.project, req, 5)
		if wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("batch at the limit: %v, want rate_limited", err)
		}
	})

	t.Run("ErrMaxItems", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		f.items(t, 1)
		for _, n := range []int{0, -1, lease.MaxBatch + 1} {
			_, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, n)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "max_items" {
				t.Errorf("max %d: %v, want invalid max_items", n, err)
			}
		}
	})
}

func TestCompleteBatch(t *testing.T) {
	t.Parallel()

	t.Run("OneStaleEntry", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		f.items(t, 3)
		cs := f.claimBatch(t, "w", 3)
		// The second lease is lost before the batch arrives.
		if _, err := f.leases.Release(f.ctx, f.project, fence(cs[1].Lease), "gone"); err != nil {
			t.Fatal(err)
		}
		_, single := f.leases.Complete(f.ctx, f.project, fence(cs[1].Lease), nil, nil)
		answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, `{"ok":true}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(answers) != 3 {
			t.Fatalf("%d answers, want 3", len(answers))
		}
		if wgerr.CodeOf(answers[1].Err) != wgerr.CodeLeaseLost || wgerr.CodeOf(answers[1].Err) != wgerr.CodeOf(single) {
			t.Errorf("stale entry: %v, want lease_lost as the single call (%v)", answers[1].Err, single)
		}
		for _, i := range []int{0, 2} {
			a := answers[i]
			if a.Err != nil {
				t.Fatalf("entry %d: %v", i, a.Err)
			}
			if a.Completion.Item.Status != graph.StatusDone || a.Completion.Lease.Outcome == nil ||
				*a.Completion.Lease.Outcome != lease.OutcomeCompleted || a.Completion.Replayed {
				t.Errorf("entry %d: %+v", i, a.Completion)
			}
			if string(a.Completion.Item.Result) != `{"ok": true}` {
				t.Errorf("entry %d item result %s", i, a.Completion.Item.Result)
			}
		}
		if got := f.getItem(t, cs[1].Item.ID).State; got != graph.StateReady {
			t.Errorf("the released item is %s, want ready (the batch must not touch it)", got)
		}
		if l := f.getLease(t, cs[1].Lease.ID); *l.Outcome != lease.OutcomeReleased || l.StaleCalls != 2 {
			t.Errorf("stale lease: outcome %s, %d stale calls; want released and 2 (single + batch)", *l.Outcome, l.StaleCalls)
		}
		f.checkInvariants(t)
	})

	t.Run("ReplayAndConflict", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		f.items(t, 2)
		cs := f.claimBatch(t, "w", 2)
		if _, err := f.leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, `{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		before := f.snapshot(t, cs[0].Item.ID)
		entries := completions(cs, `{ "n" : 1 }`)
		entries[1].Result = json.RawMessage(`{"n":2}`)
		answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, entries)
		if err != nil {
			t.Fatal(err)
		}
		if answers[0].Err != nil || !answers[0].Completion.Replayed {
			t.Errorf("identical repeat: %v replayed=%v, want a replay", answers[0].Err, answers[0].Completion.Replayed)
		}
		if wgerr.CodeOf(answers[1].Err) != wgerr.CodeConflictingResult {
			t.Errorf("different result: %v, want conflicting_result", answers[1].Err)
		}
		if after := f.snapshot(t, cs[0].Item.ID); after != before {
			t.Errorf("a replay changed the stored state:\n%s\n%s", before, after)
		}
	})

	t.Run("ReleasesDependentsAndParents", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		parent := f.item(t, graph.NewItem{Labels: []string{"parent"}})
		a := f.item(t, graph.NewItem{ParentID: &parent.ID})
		b := f.item(t, graph.NewItem{ParentID: &parent.ID})
		dep := f.item(t, graph.NewItem{DependsOn: []uuid.UUID{a.ID}, Labels: []string{"dep"}})
		cs := f.claimBatch(t, "w", 10)
		if len(cs) != 2 {
			t.Fatalf("granted %d, want the two children", len(cs))
		}
		answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, ``))
		if err != nil || answers[0].Err != nil || answers[1].Err != nil {
			t.Fatalf("%v %+v", err, answers)
		}
		if got := f.getItem(t, dep.ID).State; got != graph.StateReady {
			t.Errorf("dependent is %s, want ready", got)
		}
		if got := f.getItem(t, parent.ID).State; got != graph.StateReady {
			t.Errorf("parent is %s, want ready once both children are done", got)
		}
		if got := f.getItem(t, b.ID).Status; got != graph.StatusDone {
			t.Errorf("child b is %s, want done", got)
		}
		f.checkInvariants(t)
	})

	t.Run("ExpiredFence", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		its := f.items(t, 2)
		cs := f.claimBatch(t, "w", 2)
		before := []string{f.snapshot(t, its[0].ID), f.snapshot(t, its[1].ID)}
		f.clock.Advance(ttl) // expires_at <= now: the fence no longer holds
		answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, `1`))
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range answers {
			if wgerr.CodeOf(a.Err) != wgerr.CodeLeaseLost {
				t.Errorf("entry %d: %v, want lease_lost", i, a.Err)
			}
			l := f.getLease(t, cs[i].Lease.ID)
			if l.EndedAt != nil || l.StaleCalls != 1 {
				t.Errorf("entry %d: the expired lease ended=%v stale=%d", i, l.EndedAt, l.StaleCalls)
			}
		}
		for i, it := range its {
			if after := f.snapshot(t, it.ID); after != before[i] {
				t.Errorf("item %d: a fenced-out batch changed the item or its leases", i)
			}
		}
	})

	t.Run("ErrForbiddenOtherToken", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		f.items(t, 2)
		mine, theirs := uuid.New(), uuid.New()
		a, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "a", TokenID: &mine}, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "b", TokenID: &theirs}, 1)
		if err != nil {
			t.Fatal(err)
		}
		answers, err := f.leases.CompleteBatch(f.ctx, f.project, &mine, completions(append(a, b...), `1`))
		if err != nil {
			t.Fatal(err)
		}
		if answers[0].Err != nil || wgerr.CodeOf(answers[1].Err) != wgerr.CodeForbidden {
			t.Fatalf("answers %v / %v, want ok / forbidden", answers[0].Err, answers[1].Err)
		}
		if l := f.getLease(t, b[0].Lease.ID); l.EndedAt != nil {
			t.Error("a batch ended a lease of another token")
		}
		hb, err := f.leases.HeartbeatBatch(f.ctx, f.project, &mine, []lease.HeartbeatEntry{{Fence: fence(b[0].Lease)}})
		if err != nil || wgerr.CodeOf(hb[0].Err) != wgerr.CodeForbidden {
			t.Fatalf("heartbeat of another token's lease: %v %v, want forbidden", err, hb[0].Err)
		}
	})

	t.Run("ErrNotFoundOtherProject", func(t *testing.T) {
		// A lease of another project is not found, for an agent as for an
		// admin, whoever holds it: it was forbidden to an agent, which
		// told it that the lease exists elsewhere.
		t.Parallel()
		f := setup(t, lease.Config{})
		f.items(t, 1)
		mine, theirs := uuid.New(), uuid.New()
		b, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "b", TokenID: &theirs}, 1)
		if err != nil {
			t.Fatal(err)
		}
		other, err := f.graph.CreateProject(f.ctx, fmt.Sprintf("p%d", projectCounter.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		for name, token := range map[string]*uuid.UUID{"Agent": &mine, "Admin": nil} {
			answers, err := f.leases.CompleteBatch(f.ctx, other.ID, token, completions(b, `1`))
			if err != nil || wgerr.CodeOf(answers[0].Err) != wgerr.CodeNotFound {
				t.Errorf("%s: completion of another project's lease: %v %v, want not_found", name, err, answers[0].Err)
			}
			hb, err := f.leases.HeartbeatBatch(f.ctx, other.ID, token, []lease.HeartbeatEntry{{Fence: fence(b[0].Lease)}})
			if err != nil || wgerr.CodeOf(hb[0].Err) != wgerr.CodeNotFound {
				t.Errorf("%s: heartbeat of another project's lease: %v %v, want not_found", name, err, hb[0].Err)
			}
		}
		if l := f.getLease(t, b[0].Lease.ID); l.EndedAt != nil || l.StaleCalls != 0 {
			t.Errorf("a batch of another project touched the lease: ended %v, stale calls %d", l.EndedAt, l.StaleCalls)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		f := setup(t, lease.Config{})
		its := f.items(t, 2)
		cs := f.claimBatch(t, "w", 2)
		before := f.snapshot(t, its[0].ID)
		cases := map[string][]lease.CompletionEntry{
			"completions":             nil,
			"completions[1].lease_id": {completions(cs, `1`)[0], completions(cs, `2`)[0]},
			"completions[1].epoch":    {completions(cs, `1`)[0], {Fence: lease.Fence{LeaseID: cs[1].Lease.ID}}},
			"completions[0].result":   {{Fence: fence(cs[0].Lease), Result: json.RawMessage(`{`)}},
		}
		for field, entries := range cases {
			_, err := f.leases.CompleteBatch(f.ctx, f.project, nil, entries)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != field {
				t.Errorf("%s: %v, want invalid_argument on that field", field, err)
			}
		}
		if after := f.snapshot(t, its[0].ID); after != before {
			t.Errorf("a refused batch changed the stored state")
		}
	})
}

func TestHeartbeatBatch(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.items(t, 3)
	cs := f.claimBatch(t, "w", 3)
	if _, err := f.leases.RequestStop(f.ctx, f.project, cs[0].Lease.ID, "ann", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Release(f.ctx, f.project, fence(cs[2].Lease), ""); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(ttl / 2)
	entries := make([]lease.HeartbeatEntry, len(cs))
	for i, c := range cs {
		entries[i] = lease.HeartbeatEntry{Fence: fence(c.Lease), Heartbeat: lease.Heartbeat{Progress: json.RawMessage(`{"step":1}`)}}
	}
	entries[1].TTL = 2 * ttl
	answers, err := f.leases.HeartbeatBatch(f.ctx, f.project, nil, entries)
	if err != nil {
		t.Fatal(err)
	}
	if a := answers[0]; a.Err != nil || !a.Result.StopRequested || a.Result.Lease.Heartbeats != 1 ||
		!a.Result.Lease.ExpiresAt.Equal(f.clock.Now().Add(ttl)) {
		t.Errorf("entry 0: %v %+v, want a renewal for ttl carrying the stop", a.Err, a.Result)
	}
	if a := answers[1]; a.Err != nil || a.Result.StopRequested || !a.Result.Lease.ExpiresAt.Equal(f.clock.Now().Add(2*ttl)) {
		t.Errorf("entry 1: %v %+v, want a renewal for 2*ttl", a.Err, a.Result)
	}
	if wgerr.CodeOf(answers[2].Err) != wgerr.CodeLeaseLost {
		t.Errorf("entry 2 (released): %v, want lease_lost", answers[2].Err)
	}
	if l := f.getLease(t, cs[2].Lease.ID); l.Heartbeats != 0 || l.StaleCalls != 1 {
		t.Errorf("the released lease: %d heartbeats, %d stale calls", l.Heartbeats, l.StaleCalls)
	}
	// Past the expiry no entry is renewed, even before anyone ends it.
	f.clock.Advance(ttl)
	answers, err = f.leases.HeartbeatBatch(f.ctx, f.project, nil, entries[:1])
	if err != nil || wgerr.CodeOf(answers[0].Err) != wgerr.CodeLeaseLost {
		t.Fatalf("expired: %v %v, want lease_lost", err, answers[0].Err)
	}
}

// TestBatchClaimersRace: many batch claimers and completers at once on
// their own database (concurrent transactions). No item is granted twice,
// checked from the stored history, and every item ends done with exactly
// one completed lease.
func TestBatchClaimersRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	const items, claimers = 300, 12
	f.items(t, items)
	var wg sync.WaitGroup
	for w := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 1+w%9)
				if errors.Is(err, lease.ErrNothingReady) {
					return
				}
				if err != nil {
					t.Errorf("ClaimBatch: %v", err)
					return
				}
				answers, err := f.leases.CompleteBatch(f.ctx, f.project, nil, completions(cs, `true`))
				if err != nil {
					t.Errorf("CompleteBatch: %v", err)
					return
				}
				for _, a := range answers {
					if a.Err != nil {
						t.Errorf("entry: %v", a.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
	var leases, granted, completed, notDone int
	err := f.pool.QueryRow(f.ctx, `
		SELECT (SELECT count(*) FROM leases WHERE project_id = $1),
		       (SELECT count(DISTINCT item_id) FROM leases WHERE project_id = $1),
		       (SELECT count(*) FROM leases WHERE project_id = $1 AND outcome = 'completed'),
		       (SELECT count(*) FROM items WHERE project_id = $1 AND status <> 'done')`, f.project).
		Scan(&leases, &granted, &completed, &notDone)
	if err != nil {
		t.Fatal(err)
	}
	if leases != items || granted != items || completed != items || notDone != 0 {
		t.Fatalf("history: %d leases of %d items, %d completed, %d items not done; want %d of each and 0",
			leases, granted, completed, notDone, items)
	}
	f.checkInvariants(t)
}
