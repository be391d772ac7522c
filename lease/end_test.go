package lease_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestComplete(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})

	t.Run("OK", func(t *testing.T) {
		parent := f.item(t, graph.NewItem{Title: "parent"})
		child := f.item(t, graph.NewItem{Title: "child", ParentID: &parent.ID, Priority: 10})
		dependent := f.item(t, graph.NewItem{Title: "dependent", DependsOn: []uuid.UUID{child.ID}})
		c := f.claim(t, "w")
		if c.Item.ID != child.ID {
			t.Fatalf("claimed %s, want the child", c.Item.Title)
		}
		wt := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		done, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{"answer": 42}`), &wt)
		if err != nil {
			t.Fatal(err)
		}
		if done.Replayed || done.Lease.Outcome == nil || *done.Lease.Outcome != lease.OutcomeCompleted ||
			!done.Lease.EndedAt.Equal(*f.clock.Now()) || string(done.Lease.Result) != `{"answer": 42}` ||
			!done.Lease.WorkerTime.Equal(wt) {
			t.Fatalf("completion = %+v", done.Lease)
		}
		if done.Item.State != graph.StateDone || string(done.Item.Result) != `{"answer": 42}` ||
			done.Item.ActiveLeaseID != nil || *done.Item.PreviousWorker != "w" {
			t.Fatalf("item = %+v", done.Item)
		}
		for _, id := range []uuid.UUID{parent.ID, dependent.ID} {
			if got := f.getItem(t, id); got.State != graph.StateReady {
				t.Errorf("%s: state %s, want ready", got.Title, got.State)
			}
		}
		f.checkInvariants(t)
	})
	t.Run("Replayed", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{"a":1,"b":[1,2]}`), nil); err != nil {
			t.Fatal(err)
		}
		before := f.snapshot(t, it.ID)
		// Long after the lease would have expired, an identical result
		// (key order and spacing aside) is acknowledged.
		f.clock.Advance(ttl * 10)
		again, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{ "b": [1, 2], "a": 1 }`), nil)
		if err != nil || !again.Replayed || again.Lease.ID != l.ID || again.Item.State != graph.StateDone {
			t.Fatalf("replay = %+v, %v", again, err)
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatalf("replay changed state:\n%s\n%s", before, after)
		}
	})
	t.Run("ErrConflictingResult", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{"v":1}`), nil); err != nil {
			t.Fatal(err)
		}
		before := f.snapshot(t, it.ID)
		_, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{"v":2}`), nil)
		if !errors.Is(err, wgerr.ConflictingResult) {
			t.Fatalf("err = %v, want conflicting_result", err)
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatalf("conflicting result changed state:\n%s\n%s", before, after)
		}
		if got := f.getItem(t, it.ID); string(got.Result) != `{"v": 1}` {
			t.Fatalf("item result = %s, want the first; %s", got.Result, f.snapshot(t, it.ID))
		}
		obs, err := observationsOf(f.ctx, f.leases, f.project, l.ID)
		if err != nil || len(obs) != 1 || obs[0].Kind != "conflicting_result" || obs[0].Operation != "complete" ||
			string(obs[0].Payload) != `{"result": {"v": 2}}` {
			t.Fatalf("observations = %+v, %v", obs, err)
		}
	})
	t.Run("ErrNoResultReplayMismatch", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); err != nil {
			t.Fatal(err)
		}
		if c, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`null`), nil); err != nil || !c.Replayed {
			t.Fatalf("null replay = %+v, %v", c, err)
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`1`), nil); !errors.Is(err, wgerr.ConflictingResult) {
			t.Fatalf("err = %v, want conflicting_result", err)
		}
	})
	t.Run("ErrCompleteAfterRelease", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		if _, err := f.leases.Release(f.ctx, f.project, fence(l), "no"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); !errors.Is(err, wgerr.LeaseLost) {
			t.Fatalf("err = %v, want lease_lost", err)
		}
	})
	t.Run("ErrInvalidResult", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{`), nil); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
		if got := f.getLease(t, l.ID); got.EndedAt != nil {
			t.Fatal("lease ended by an invalid completion")
		}
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it := f.item(t, graph.NewItem{})
	l := f.claim(t, "w1").Lease
	got, err := f.leases.Release(f.ctx, f.project, fence(l), "need a break")
	if err != nil {
		t.Fatal(err)
	}
	if *got.Outcome != lease.OutcomeReleased || string(got.OutcomeDetail) != `{"reason": "need a break"}` {
		t.Fatalf("lease = %+v (%s)", got, got.OutcomeDetail)
	}
	item := f.getItem(t, it.ID)
	if item.State != graph.StateReady || *item.PreviousWorker != "w1" {
		t.Fatalf("item = %+v", item)
	}
	if c := f.claim(t, "w2"); c.Item.ID != it.ID || c.Lease.Epoch != 2 {
		t.Fatalf("re-claim = %+v", c.Lease)
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MaxFailures: 3, RetryBackoff: 10 * time.Second, MaxRetryBackoff: 15 * time.Second})
	it := f.item(t, graph.NewItem{})

	for i, backoff := range []time.Duration{10 * time.Second, 15 * time.Second} {
		l := f.claim(t, "w").Lease
		res, err := f.leases.Fail(f.ctx, f.project, fence(l), lease.Failure{Message: "boom", Details: json.RawMessage(`{"exit":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		want := f.clock.Now().Add(backoff)
		if res.RetryAfter == nil || !res.RetryAfter.Equal(want) || res.Attention != nil || res.Item.Failures != int32(i+1) {
			t.Fatalf("failure %d: %+v, want retry after %v", i+1, res, want)
		}
		if *res.Lease.Outcome != lease.OutcomeFailed || string(res.Lease.OutcomeDetail) != `{"details": {"exit": 1}, "message": "boom"}` {
			t.Fatalf("lease = %+v (%s)", res.Lease, res.Lease.OutcomeDetail)
		}
		item := f.getItem(t, it.ID)
		if item.State != graph.StateBlocked || item.BlockedBy.RetryAfter == nil || !item.BlockedBy.RetryAfter.Equal(want) {
			t.Fatalf("item = %+v, want blocked until %v", item.BlockedBy, want)
		}
		f.clock.Advance(backoff - time.Millisecond)
		if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("claim during backoff: err = %v", err)
		}
		f.clock.Advance(time.Millisecond)
	}

	l := f.claim(t, "w").Lease
	res, err := f.leases.Fail(f.ctx, f.project, fence(l), lease.Failure{Message: "boom again"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attention == nil || res.RetryAfter != nil || res.Attention.Reason != attention.ReasonRepeatedFailure ||
		res.Attention.Source != attention.SourceSystem || !res.Attention.Blocking || *res.Attention.LeaseID != l.ID {
		t.Fatalf("third failure = %+v", res)
	}
	item := f.getItem(t, it.ID)
	if item.State != graph.StateAttention || item.Failures != 0 || item.NotBefore != nil {
		t.Fatalf("item = %+v, want waiting for a person with failures cleared", item)
	}
	f.clock.Advance(time.Hour)
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim while attention open: err = %v", err)
	}
	if _, err := f.att.Resolve(f.ctx, f.project, res.Attention.ID, "try once more", "alice"); err != nil {
		t.Fatal(err)
	}
	c := f.claim(t, "w")
	if c.Item.ID != it.ID || len(c.Attention) != 1 || *c.Attention[0].Answer != "try once more" {
		t.Fatalf("claim after resolution = %+v", c)
	}
}

func TestDecompose(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	parent := f.item(t, graph.NewItem{Title: "epic"})
	l := f.claim(t, "planner").Lease
	d, err := f.leases.Decompose(f.ctx, f.project, fence(l), []graph.NewChild{
		{Key: "a", Title: "first"},
		{Key: "b", Title: "second", DependsOnKeys: []string{"a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Children) != 2 || *d.Lease.Outcome != lease.OutcomeDecomposed || d.Children[0].CreatedBy != "planner" {
		t.Fatalf("decomposition = %+v", d)
	}
	var detail struct{ Children []uuid.UUID }
	if err := json.Unmarshal(d.Lease.OutcomeDetail, &detail); err != nil || len(detail.Children) != 2 || detail.Children[0] != d.Children[0].ID {
		t.Fatalf("detail = %s", d.Lease.OutcomeDetail)
	}
	if got := f.getItem(t, parent.ID); got.State != graph.StateBlocked || got.ActiveLeaseID != nil {
		t.Fatalf("parent = %+v, want blocked by its children", got)
	}
	for _, want := range []uuid.UUID{d.Children[0].ID, d.Children[1].ID, parent.ID} {
		c := f.claim(t, "w")
		if c.Item.ID != want {
			t.Fatalf("claimed %s, want %v", c.Item.Title, want)
		}
		if want == parent.ID {
			break
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("ErrCycle", func(t *testing.T) {
		it := f.item(t, graph.NewItem{Priority: 100})
		l := f.claim(t, "w").Lease
		before := f.snapshot(t, it.ID)
		_, err := f.leases.Decompose(f.ctx, f.project, fence(l), []graph.NewChild{
			{Key: "a", Title: "a", DependsOnKeys: []string{"b"}},
			{Key: "b", Title: "b", DependsOnKeys: []string{"a"}},
		})
		if !errors.Is(err, wgerr.DependencyCycle) {
			t.Fatalf("err = %v, want dependency_cycle", err)
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatal("refused decomposition changed state")
		}
	})
	f.checkInvariants(t)
}

func TestCancelledByPerson(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l := f.claimNew(t, "w")
	if _, err := f.graph.Cancel(f.ctx, f.project, it.ID, "alice", "not needed"); err != nil {
		t.Fatal(err)
	}
	got := f.getLease(t, l.ID)
	if got.Outcome == nil || *got.Outcome != lease.OutcomeCancelled {
		t.Fatalf("lease = %+v, want cancelled", got)
	}
	before := f.snapshot(t, it.ID)
	for _, m := range mutations {
		if err := m.call(f, fence(l)); !errors.Is(err, wgerr.LeaseLost) {
			t.Errorf("%s: err = %v, want lease_lost", m.name, err)
		}
	}
	if after := f.snapshot(t, it.ID); after != before {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
	f.checkInvariants(t)
}
