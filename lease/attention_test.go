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

const window = 10 * time.Minute

func (f fixture) ask(t testing.TB, l lease.Lease, question string, blocking bool) lease.AskResult {
	t.Helper()
	res, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{
		Question: question, Blocking: blocking, SuggestedAnswers: []string{"yes", "no"},
		Context: json.RawMessage(`{"file":"main.go"}`),
	})
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return res
}

func (f fixture) resolve(t testing.TB, r attention.Request, answer string) {
	t.Helper()
	if _, err := f.att.Resolve(f.ctx, f.project, r.ID, answer, "alice"); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
}

func (f fixture) nothingFor(t testing.TB, worker string, labels []string) {
	t.Helper()
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker, Labels: labels})
	if !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim by %s = %v (%v), want nothing ready", worker, c.Item.Title, err)
	}
}

func (f fixture) claimLabels(t testing.TB, worker string, labels []string) lease.Claim {
	t.Helper()
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker, Labels: labels})
	if err != nil {
		t.Fatalf("claim by %s: %v", worker, err)
	}
	return c
}

func TestAskBlocking(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{}).withWindow(window)

	t.Run("EndsLeaseAndWaits", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		res := f.ask(t, l, "Which database?", true)
		if res.Lease.Outcome == nil || *res.Lease.Outcome != lease.OutcomeAttentionRequested || res.Lease.EndedAt == nil {
			t.Fatalf("lease = %+v, want ended as attention_requested", res.Lease)
		}
		var detail struct {
			AttentionRequestID string `json:"attention_request_id"`
		}
		if json.Unmarshal(res.Lease.OutcomeDetail, &detail); detail.AttentionRequestID != res.Request.ID.String() {
			t.Fatalf("outcome detail = %s", res.Lease.OutcomeDetail)
		}
		r := res.Request
		if r.Source != attention.SourceWorker || r.RequestedBy != "agent-a" || *r.LeaseID != l.ID || *r.Epoch != l.Epoch ||
			!r.Blocking || r.State != attention.StateOpen {
			t.Fatalf("request = %+v", r)
		}
		got := f.getItem(t, it.ID)
		if got.State != graph.StateAttention || got.ActiveLeaseID != nil || *got.PreviousWorker != "agent-a" {
			t.Fatalf("item = %+v", got)
		}
		f.clock.Advance(time.Hour)
		f.nothingFor(t, "agent-a", it.Labels)
		if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{}); !errors.Is(err, wgerr.LeaseLost) {
			t.Fatalf("heartbeat after asking: err = %v, want lease_lost", err)
		}
	})
	t.Run("ErrStaleLeaseCannotAsk", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		f.clock.Advance(ttl)
		before := f.snapshot(t, it.ID)
		for _, blocking := range []bool{true, false} {
			_, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{Question: "late?", Blocking: blocking})
			if !errors.Is(err, wgerr.LeaseLost) {
				t.Fatalf("blocking=%v: err = %v, want lease_lost", blocking, err)
			}
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatalf("stale ask changed state:\n%s\n%s", before, after)
		}
	})
	t.Run("TwoRequestsResolvingOneLeavesItWaiting", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		first := f.ask(t, l, "first?", true).Request
		hold, err := f.att.Hold(f.ctx, f.project, it.ID, "and wait for me", "bob")
		if err != nil {
			t.Fatal(err)
		}
		f.resolve(t, first, "yes")
		f.clock.Advance(time.Hour)
		f.nothingFor(t, "agent-a", it.Labels)
		if got := f.getItem(t, it.ID); got.State != graph.StateAttention || len(got.BlockedBy.Attention) != 1 {
			t.Fatalf("item = %+v", got)
		}
		f.resolve(t, hold, "go")
		if c := f.claimLabels(t, "agent-a", it.Labels); c.Item.ID != it.ID {
			t.Fatal("wrong item")
		}
	})
	t.Run("ReclaimCarriesQuestionAndAnswer", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		r := f.ask(t, l, "Use Postgres 17?", true).Request
		f.resolve(t, r, "yes, 17")
		c := f.claimLabels(t, "agent-a", it.Labels)
		if c.Lease.Epoch != l.Epoch+1 || len(c.Attention) != 1 {
			t.Fatalf("claim = %+v", c)
		}
		a := c.Attention[0]
		if a.Question != "Use Postgres 17?" || a.Answer == nil || *a.Answer != "yes, 17" || *a.ResolvedBy != "alice" ||
			len(a.SuggestedAnswers) != 2 || string(a.Context) != `{"file": "main.go"}` || *a.LeaseID != l.ID {
			t.Fatalf("attention history = %+v", a)
		}
	})
	f.checkInvariants(t)
}

func TestAskReadinessAfterResolution(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})

	t.Run("DependencyStillOpen", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		r := f.ask(t, l, "q", true).Request
		prereq := f.item(t, graph.NewItem{Title: "prereq", Labels: []string{"prereq"}})
		if err := f.graph.AddDependency(f.ctx, f.project, it.ID, prereq.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		f.resolve(t, r, "a")
		got := f.getItem(t, it.ID)
		if got.State != graph.StateBlocked || len(got.BlockedBy.Dependencies) != 1 || len(got.BlockedBy.Attention) != 0 {
			t.Fatalf("item = %+v, want blocked by its dependency only", got)
		}
		f.nothingFor(t, "w", it.Labels)
		p := f.claimLabels(t, "x", []string{"prereq"})
		if _, err := f.leases.Complete(f.ctx, f.project, fence(p.Lease), nil, nil); err != nil {
			t.Fatal(err)
		}
		if c := f.claimLabels(t, "w", it.Labels); c.Item.ID != it.ID {
			t.Fatal("wrong item")
		}
	})
	t.Run("ChildStillOpen", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		r := f.ask(t, l, "q", true).Request
		child := f.item(t, graph.NewItem{Title: "child", ParentID: &it.ID, Labels: []string{"child"}})
		f.resolve(t, r, "a")
		if got := f.getItem(t, it.ID); got.State != graph.StateBlocked || len(got.BlockedBy.Children) != 1 {
			t.Fatalf("item = %+v, want blocked by its child", got)
		}
		c := f.claimLabels(t, "x", []string{"child"})
		if c.Item.ID != child.ID {
			t.Fatal("wrong item")
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.getItem(t, it.ID); got.State != graph.StateReady {
			t.Fatalf("parent = %s, want ready", got.State)
		}
	})
}

func TestAskNonBlocking(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l := f.claimNew(t, "w")
	res := f.ask(t, l, "Should logs be JSON?", false)
	if res.Lease.EndedAt != nil || res.Lease.ID != l.ID || res.Request.Blocking {
		t.Fatalf("ask = %+v", res)
	}
	if got := f.getItem(t, it.ID); got.State != graph.StateLeased {
		t.Fatalf("item = %s, want still leased", got.State)
	}
	hb, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
	if err != nil || len(hb.Answers) != 0 {
		t.Fatalf("heartbeat before the answer = %+v, %v", hb.Answers, err)
	}
	f.resolve(t, res.Request, "yes")
	hb, err = f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
	if err != nil || len(hb.Answers) != 1 || hb.Answers[0].ID != res.Request.ID || *hb.Answers[0].Answer != "yes" {
		t.Fatalf("heartbeat after the answer = %+v, %v", hb.Answers, err)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, fence(l), nil, nil); err != nil {
		t.Fatalf("complete after a non-blocking question: %v", err)
	}
}

func TestContinuityWindow(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{}).withWindow(window)

	t.Run("PrefersPreviousWorker", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		f.resolve(t, f.ask(t, l, "q", true).Request, "a")
		if got := f.getItem(t, it.ID); got.BlockedBy.ReservedFor == nil || *got.BlockedBy.ReservedFor != "agent-a" {
			t.Fatalf("item = %+v, want reserved for agent-a", got.BlockedBy)
		}
		f.clock.Advance(window - time.Second)
		f.nothingFor(t, "agent-b", it.Labels)
		if c := f.claimLabels(t, "agent-a", it.Labels); c.Item.ID != it.ID {
			t.Fatal("wrong item")
		}
	})
	t.Run("OthersAfterWindow", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		f.resolve(t, f.ask(t, l, "q", true).Request, "a")
		f.nothingFor(t, "agent-b", it.Labels)
		f.clock.Advance(window)
		c := f.claimLabels(t, "agent-b", it.Labels)
		if c.Item.ID != it.ID || len(c.Attention) != 1 {
			t.Fatalf("claim = %+v", c)
		}
		if got := f.getItem(t, it.ID); got.PreferredWorker != nil {
			t.Fatalf("preference kept after a claim: %+v", got)
		}
	})
	t.Run("BoundToTheToken", func(t *testing.T) {
		// Another token of the project presenting the same worker label does
		// not get the reserved item (nor the person's answer with it).
		tokenA, tokenB := uuid.New(), uuid.New()
		label := "t-" + uuid.NewString()[:8]
		it := f.item(t, graph.NewItem{Labels: []string{label}})
		claim := func(token uuid.UUID) (lease.Claim, error) {
			return f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{
				Worker: "victim-worker", Labels: []string{label}, TokenID: &token,
			})
		}
		c, err := claim(tokenA)
		if err != nil || c.Item.ID != it.ID {
			t.Fatalf("claim by token A = %v, %v", c.Item.ID, err)
		}
		f.resolve(t, f.ask(t, c.Lease, "q", true).Request, "the secret answer")
		if c, err := claim(tokenB); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("token B with the same worker label got %v (%d requests), err %v; want nothing ready",
				c.Item.ID, len(c.Attention), err)
		}
		if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "victim-worker", Labels: []string{label}}); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("a claim without a token got the item reserved for token A (err %v)", err)
		}
		c, err = claim(tokenA)
		if err != nil || c.Item.ID != it.ID || len(c.Attention) != 1 {
			t.Fatalf("claim by token A after the answer = %+v, %v", c, err)
		}
	})
	t.Run("OtherItemsStillServed", func(t *testing.T) {
		it, l := f.claimNew(t, "agent-a")
		f.resolve(t, f.ask(t, l, "q", true).Request, "a")
		other := f.item(t, graph.NewItem{Labels: it.Labels, Title: "other"})
		if c := f.claimLabels(t, "agent-b", it.Labels); c.Item.ID != other.ID {
			t.Fatalf("agent-b got %s, want the unreserved item", c.Item.Title)
		}
	})
}

func TestHold(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l := f.claimNew(t, "w")
	hold, err := f.att.Hold(f.ctx, f.project, it.ID, "wait for the release", "alice")
	if err != nil {
		t.Fatal(err)
	}
	// No pre-emption: the lease runs on.
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{}); err != nil {
		t.Fatalf("heartbeat under a hold: %v", err)
	}
	if _, err := f.leases.Release(f.ctx, f.project, fence(l), ""); err != nil {
		t.Fatal(err)
	}
	f.nothingFor(t, "w", it.Labels)
	if got := f.getItem(t, it.ID); got.State != graph.StateAttention {
		t.Fatalf("item = %s, want attention", got.State)
	}
	f.resolve(t, hold, "released")
	if c := f.claimLabels(t, "w2", it.Labels); c.Item.ID != it.ID {
		t.Fatal("wrong item")
	}
}
