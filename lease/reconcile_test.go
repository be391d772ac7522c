package lease_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// uncertain is an item with on_expiry "reconcile" whose lease expired
// (stub clock) and was reaped by the sweeper, with the request that holds
// it, after the old worker's late completion was refused.
type uncertain struct {
	item  graph.Item
	old   lease.Lease
	req   attention.Request
	label string
}

// mustUncertain creates an item labelled label with the given on_expiry
// ("" : the project's default), lets worker "old" claim it, heartbeat with
// progress and vanish past the TTL, sweeps, and checks that the item waits
// with an uncertain_outcome request naming the attempt; then delivers the
// old worker's late completion and checks it is kept as an observation and
// not applied.
func mustUncertain(t *testing.T, f fixture, onExpiry, label string) uncertain {
	t.Helper()
	return mustUncertainItem(t, f, graph.NewItem{Labels: []string{label}, OnExpiry: onExpiry})
}

// mustUncertainItem is mustUncertain for the item n (labelled with one
// label, which the claim asks for).
func mustUncertainItem(t *testing.T, f fixture, n graph.NewItem) uncertain {
	t.Helper()
	label := n.Labels[0]
	it := f.item(t, n)
	c := f.claimLabels(t, "old", []string{label})
	hb, err := f.leases.Heartbeat(f.ctx, f.project, fence(c.Lease), lease.Heartbeat{Progress: json.RawMessage(`{"step":"pushed"}`)})
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	f.clock.Advance(ttl + time.Second)
	if n, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1 expired lease", n, err)
	}
	got := f.getItem(t, it.ID)
	if got.State != graph.StateAttention || len(got.BlockedBy.Attention) != 1 {
		t.Fatalf("item = %s %+v, want waiting for a person", got.State, got.BlockedBy)
	}
	f.nothingFor(t, "fresh", []string{label})
	reqsPage, err := f.att.ForItem(f.ctx, f.project, it.ID, "", 0)
	reqs := reqsPage.Requests
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests = %+v, %v", reqs, err)
	}
	r := reqs[0]
	if r.Reason != attention.ReasonUncertainOutcome || r.Source != attention.SourceSystem || !r.Blocking ||
		r.LeaseID == nil || *r.LeaseID != c.Lease.ID || *r.Epoch != c.Lease.Epoch {
		t.Fatalf("request = %+v, want a blocking system uncertain_outcome naming lease %s", r, c.Lease.ID)
	}
	var ctx struct {
		Attempt struct {
			LeaseID         uuid.UUID       `json:"lease_id"`
			Worker          string          `json:"worker"`
			Epoch           int64           `json:"epoch"`
			LastHeartbeatAt *time.Time      `json:"last_heartbeat_at"`
			Progress        json.RawMessage `json:"progress"`
		} `json:"attempt"`
	}
	if err := json.Unmarshal(r.Context, &ctx); err != nil {
		t.Fatalf("context %s: %v", r.Context, err)
	}
	a := ctx.Attempt
	if a.LeaseID != c.Lease.ID || a.Worker != "old" || a.Epoch != c.Lease.Epoch ||
		a.LastHeartbeatAt == nil || !a.LastHeartbeatAt.Equal(*hb.Lease.HeartbeatAt) || string(a.Progress) != `{"step": "pushed"}` {
		t.Fatalf("attempt = %+v, want worker old, epoch %d, heartbeat %v, progress", a, c.Lease.Epoch, hb.Lease.HeartbeatAt)
	}
	if !strings.Contains(r.Question, `"old"`) {
		t.Fatalf("question %q does not name the worker", r.Question)
	}

	// The old attempt reports late: refused, kept, not applied.
	before := f.snapshot(t, it.ID)
	_, err = f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{"late":true}`), nil)
	if !errors.Is(err, wgerr.LeaseLost) {
		t.Fatalf("late Complete: err = %v, want lease_lost", err)
	}
	if after := f.snapshot(t, it.ID); after != before {
		t.Fatalf("the late completion changed the item:\nbefore %s\nafter  %s", before, after)
	}
	obs, err := observationsOf(f.ctx, f.leases, f.project, c.Lease.ID)
	if err != nil || len(obs) != 1 || obs[0].Kind != "stale_call" || !strings.Contains(string(obs[0].Payload), `"late": true`) {
		t.Fatalf("observations = %+v, %v; want the late completion kept", obs, err)
	}
	return uncertain{item: it, old: f.getLease(t, c.Lease.ID), req: r, label: label}
}

func TestOnExpiryReconcile(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})

	t.Run("Retry", func(t *testing.T) {
		u := mustUncertain(t, f, graph.OnExpiryReconcile, "retry")
		r, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionRetry, nil, "", "alice")
		if err != nil || r.State != attention.StateResolved || r.Decision == nil || *r.Decision != attention.DecisionRetry || *r.ResolvedBy != "alice" {
			t.Fatalf("Decide = %+v, %v", r, err)
		}
		c := f.claimLabels(t, "fresh", []string{"retry"})
		if c.Item.ID != u.item.ID || c.Lease.Epoch != u.old.Epoch+1 {
			t.Fatalf("claim = item %s epoch %d, want item %s epoch %d", c.Item.ID, c.Lease.Epoch, u.item.ID, u.old.Epoch+1)
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil); err != nil {
			t.Fatal(err)
		}
		f.checkInvariants(t)
	})

	t.Run("Done", func(t *testing.T) {
		u := mustUncertain(t, f, graph.OnExpiryReconcile, "done")
		r, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionDone, json.RawMessage(`{"checked":"by hand"}`), "the push landed", "alice")
		if err != nil || r.Decision == nil || *r.Decision != attention.DecisionDone || *r.ResolvedBy != "alice" ||
			!strings.Contains(*r.Answer, "the push landed") {
			t.Fatalf("Decide = %+v, %v", r, err)
		}
		it := f.getItem(t, u.item.ID)
		if it.State != graph.StateDone || string(it.Result) != `{"checked": "by hand"}` {
			t.Fatalf("item = %s %s, want done with the person's result", it.State, it.Result)
		}
		if l := f.getLease(t, u.old.ID); *l.Outcome != lease.OutcomeExpired || l.Result != nil {
			t.Fatalf("old lease = %s %s, want expired without a result", *l.Outcome, l.Result)
		}
		f.checkInvariants(t)
	})

	// A person who decides "done" on an item that gained unfinished work
	// while it waited (a dependency on an open item, an open child) is
	// refused as blocked, naming that work, as a worker's completion is:
	// nothing changes (the request stays open, the item open, its
	// dependent and parent blocked). Once the work is finished the same
	// decision goes through.
	for _, how := range []string{"dependency", "child"} {
		t.Run("ErrDoneBlocked/"+how, func(t *testing.T) {
			parent := f.item(t, graph.NewItem{Title: "parent", Labels: []string{"parent-" + how}})
			u := mustUncertainItem(t, f, graph.NewItem{Labels: []string{"blocked-" + how}, OnExpiry: graph.OnExpiryReconcile, ParentID: &parent.ID})
			dependent := f.item(t, graph.NewItem{Title: "dependent", Labels: []string{"dependent-" + how}, DependsOn: []uuid.UUID{u.item.ID}})
			var open graph.Item
			switch how {
			case "dependency":
				open = f.item(t, graph.NewItem{Title: "prerequisite", Labels: []string{"later"}})
				if err := f.graph.AddDependency(f.ctx, f.project, u.item.ID, open.ID, "person"); err != nil {
					t.Fatal(err)
				}
			case "child":
				open = f.item(t, graph.NewItem{Title: "child", ParentID: &u.item.ID, Labels: []string{"later"}})
			}
			before := f.snapshot(t, u.item.ID)
			_, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionDone, json.RawMessage(`{"checked":"by hand"}`), "", "alice")
			checkBlocked(t, err, open)
			if got := f.snapshot(t, u.item.ID); got != before {
				t.Errorf("a refused decision changed the item or its request:\nbefore %s\nafter  %s", before, got)
			}
			if st := f.getItem(t, dependent.ID).State; st != graph.StateBlocked {
				t.Errorf("the dependent of the refused item is %s, want blocked", st)
			}
			if p := f.getItem(t, parent.ID); p.State != graph.StateBlocked || len(p.BlockedBy.Children) != 1 {
				t.Errorf("the parent of the refused item is %s %+v, want blocked by it", p.State, p.BlockedBy)
			}
			if _, err := f.graph.Finish(f.ctx, f.project, open.ID, nil); err != nil {
				t.Fatal(err)
			}
			r, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionDone, json.RawMessage(`{"checked":"by hand"}`), "", "alice")
			if err != nil || r.Decision == nil || *r.Decision != attention.DecisionDone {
				t.Fatalf("Decide once unblocked = %+v, %v", r, err)
			}
			if st := f.getItem(t, u.item.ID).State; st != graph.StateDone {
				t.Errorf("item = %s, want done", st)
			}
			if st := f.getItem(t, dependent.ID).State; st != graph.StateReady {
				t.Errorf("the dependent = %s, want ready", st)
			}
			f.checkInvariants(t)
		})
	}

	t.Run("Cancel", func(t *testing.T) {
		u := mustUncertain(t, f, graph.OnExpiryReconcile, "cancel")
		r, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionCancel, nil, "", "alice")
		if err != nil || r.Decision == nil || *r.Decision != attention.DecisionCancel {
			t.Fatalf("Decide = %+v, %v", r, err)
		}
		if it := f.getItem(t, u.item.ID); it.State != graph.StateCancelled {
			t.Fatalf("item = %s, want cancelled", it.State)
		}
		f.nothingFor(t, "fresh", []string{"cancel"})
		f.checkInvariants(t)
	})

	t.Run("ErrDecisionRequired", func(t *testing.T) {
		u := mustUncertain(t, f, graph.OnExpiryReconcile, "plain")
		before := f.snapshot(t, u.item.ID)
		if _, err := f.att.Resolve(f.ctx, f.project, u.req.ID, "ok", "alice"); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("Resolve: err = %v, want invalid_argument", err)
		}
		if _, err := f.att.Dismiss(f.ctx, f.project, u.req.ID, "alice", ""); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("Dismiss: err = %v, want invalid_argument", err)
		}
		if _, err := f.att.Decide(f.ctx, f.project, u.req.ID, "maybe", nil, "", "alice"); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("Decide(maybe): err = %v, want invalid_argument", err)
		}
		if _, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionRetry, json.RawMessage(`{}`), "", "alice"); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("Decide(retry with a result): err = %v, want invalid_argument", err)
		}
		// A note too long to keep is refused naming it (the member sent).
		var we *wgerr.Error
		if _, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionRetry, nil, strings.Repeat("n", 70000), "alice"); !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "note" {
			t.Fatalf("Decide(a 70 KB note): err = %v, want invalid_argument naming note", err)
		}
		if after := f.snapshot(t, u.item.ID); after != before {
			t.Fatalf("a refused resolution changed the item:\nbefore %s\nafter  %s", before, after)
		}
		if _, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionRetry, nil, "", "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionCancel, nil, "", "bob"); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("second Decide: err = %v, want conflict", err)
		}
	})

	t.Run("ErrNotUncertain", func(t *testing.T) {
		it := f.item(t, graph.NewItem{Labels: []string{"hold"}})
		h, err := f.att.Hold(f.ctx, f.project, it.ID, "", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.att.Decide(f.ctx, f.project, h.ID, attention.DecisionDone, nil, "", "alice"); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("Decide on a hold: err = %v, want conflict", err)
		}
		if got := f.getItem(t, it.ID); got.State != graph.StateAttention {
			t.Fatalf("item = %s, want still held", got.State)
		}
	})
}

func TestOnExpiryProjectDefault(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	if _, err := f.graph.SetProjectOnExpiry(f.ctx, f.project, "sometimes"); !errors.Is(err, wgerr.Invalid) {
		t.Fatalf("SetProjectOnExpiry(sometimes): err = %v, want invalid_argument", err)
	}
	p, err := f.graph.SetProjectOnExpiry(f.ctx, f.project, graph.OnExpiryReconcile)
	if err != nil || p.OnExpiry != graph.OnExpiryReconcile {
		t.Fatalf("SetProjectOnExpiry = %+v, %v", p, err)
	}

	t.Run("Inherited", func(t *testing.T) {
		u := mustUncertain(t, f, "", "inherit")
		if u.item.OnExpiry != nil {
			t.Fatalf("item on_expiry = %v, want nil (the project's)", *u.item.OnExpiry)
		}
	})

	t.Run("ItemRetryOverrides", func(t *testing.T) {
		it := f.item(t, graph.NewItem{Labels: []string{"own"}, OnExpiry: graph.OnExpiryRetry})
		c := f.claimLabels(t, "old", []string{"own"})
		f.clock.Advance(ttl)
		if _, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.getItem(t, it.ID); got.State != graph.StateReady {
			t.Fatalf("item = %s, want ready again (on_expiry retry)", got.State)
		}
		if c2 := f.claimLabels(t, "fresh", []string{"own"}); c2.Lease.Epoch != c.Lease.Epoch+1 {
			t.Fatalf("epoch = %d, want %d", c2.Lease.Epoch, c.Lease.Epoch+1)
		}
	})

	t.Run("PatchItem", func(t *testing.T) {
		it := f.item(t, graph.NewItem{Labels: []string{"patched"}})
		retry, bad := graph.OnExpiryRetry, "never"
		if _, err := f.graph.UpdateItem(f.ctx, f.project, it.ID, graph.ItemPatch{OnExpiry: &bad}); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("UpdateItem(never): err = %v, want invalid_argument", err)
		}
		got, err := f.graph.UpdateItem(f.ctx, f.project, it.ID, graph.ItemPatch{OnExpiry: &retry})
		if err != nil || got.OnExpiry == nil || *got.OnExpiry != retry {
			t.Fatalf("UpdateItem = %+v, %v", got.OnExpiry, err)
		}
		clear := ""
		if got, err = f.graph.UpdateItem(f.ctx, f.project, it.ID, graph.ItemPatch{OnExpiry: &clear}); err != nil || got.OnExpiry != nil {
			t.Fatalf("UpdateItem(clear) = %+v, %v", got.OnExpiry, err)
		}
	})
}

// TestDecideDoneBlockedByConcurrentAdd: a dependency added by a
// transaction that holds the item's row while a person's done decision
// reaches it is seen once that transaction commits: the decision is
// refused as blocked and the request stays open. A database of its own:
// two transactions at once.
func TestDecideDoneBlockedByConcurrentAdd(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	u := mustUncertain(t, f, graph.OnExpiryReconcile, "raced")
	open := f.item(t, graph.NewItem{Title: "prerequisite", Labels: []string{"later"}})
	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(f.ctx)
	if err := graph.NewService(tx, f.clock).AddDependency(f.ctx, f.project, u.item.ID, open.ID, "person"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.att.Decide(f.ctx, f.project, u.req.ID, attention.DecisionDone, nil, "", "alice")
		done <- err
	}()
	// The decision waits for the item's row, which the uncommitted
	// dependency holds; then that commits.
	for waiting := false; !waiting; {
		if err := f.pool.QueryRow(f.ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	checkBlocked(t, <-done, open)
	if r, err := f.att.Get(f.ctx, f.project, u.req.ID); err != nil || r.State != attention.StateOpen {
		t.Errorf("request after the refused decision: %+v, %v; want open", r, err)
	}
	if it := f.getItem(t, u.item.ID); it.Status != graph.StatusOpen {
		t.Errorf("item after the refused decision: %s, want open", it.Status)
	}
	f.checkInvariants(t)
}
