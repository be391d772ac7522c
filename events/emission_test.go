package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// world is what an emission case works on: the services on one executor
// (the test's transaction, or a savepoint of it), a stub clock and a
// project.
type world struct {
	t       *testing.T
	ctx     context.Context
	clock   *clock.Stub
	project uuid.UUID
	graph   *graph.Service
	leases  *lease.Service
	att     *attention.Service
	auth    *auth.Service
}

const leaseTTL = time.Minute

func on(t *testing.T, tx db.Executor, clk *clock.Stub, project uuid.UUID) *world {
	cfg := lease.Config{DefaultTTL: leaseTTL, MaxFailures: 3}
	return &world{
		t: t, ctx: events.WithActor(context.Background(), "token:alice"), clock: clk, project: project,
		graph:  graph.NewService(tx, clk),
		leases: lease.NewService(tx, clk, cfg),
		att:    attention.NewService(tx, clk, attention.Config{ContinuityWindow: 10 * time.Minute}),
		auth:   auth.NewService(tx, clk),
	}
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) item(title string, deps ...uuid.UUID) graph.Item {
	w.t.Helper()
	it, err := w.graph.CreateItem(w.ctx, w.project, graph.NewItem{Title: title, CreatedBy: "token:alice", DependsOn: deps})
	w.must(err)
	return it
}

func (w *world) claim(worker string) lease.Lease {
	w.t.Helper()
	c, err := w.leases.Claim(w.ctx, w.project, lease.ClaimRequest{Worker: worker, Principal: "token:agent"})
	w.must(err)
	return c.Lease
}

func fenceOf(l lease.Lease) lease.Fence { return lease.Fence{LeaseID: l.ID, Epoch: l.Epoch} }

// want is one expected event: its type, actor and a subset of its payload.
type want struct {
	typ     string
	actor   string
	payload map[string]any
}

// state is what a case's setup hands its change.
type state struct {
	items []graph.Item
	lease lease.Lease
	req   attention.Request
	token auth.Token
}

// TestEveryChangeWritesItsEvent performs each change the event log reports
// and checks that it wrote exactly the expected events (type, actor,
// payload), in the change's transaction: the same change rolled back
// leaves none.
//
// A database of its own: a case's setup commits before its change, since
// the log reports a transaction's net change of an item (a setup and a
// change in one transaction would be reported as one).
func TestEveryChangeWritesItsEvent(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	cases := []struct {
		name   string
		setup  func(w *world) state
		change func(w *world, s state)
		want   []want
	}{
		{name: "ItemCreated",
			setup:  func(w *world) state { return state{} },
			change: func(w *world, s state) { w.item("one") },
			want:   []want{{events.ItemCreated, "token:alice", map[string]any{"title": "one", "state": "ready"}}}},
		{name: "ItemCreatedBlockedByItsDependency",
			setup:  func(w *world) state { return state{items: []graph.Item{w.item("pre")}} },
			change: func(w *world, s state) { w.item("after", s.items[0].ID) },
			want:   []want{{events.ItemCreated, "token:alice", map[string]any{"title": "after", "state": "blocked"}}}},
		{name: "ChildBlocksItsParent",
			setup: func(w *world) state { return state{items: []graph.Item{w.item("parent")}} },
			change: func(w *world, s state) {
				_, err := w.graph.CreateItem(w.ctx, w.project, graph.NewItem{Title: "child", CreatedBy: "token:bob", ParentID: &s.items[0].ID})
				w.must(err)
			},
			want: []want{
				{events.ItemCreated, "token:bob", map[string]any{"title": "child"}},
				{events.ItemStateChanged, "token:bob", map[string]any{"from": "ready", "to": "blocked"}},
			}},
		{name: "ItemEdited",
			setup: func(w *world) state { return state{items: []graph.Item{w.item("old")}} },
			change: func(w *world, s state) {
				title, prio := "new", int32(5)
				_, err := w.graph.UpdateItem(w.ctx, w.project, s.items[0].ID, graph.ItemPatch{Title: &title, Priority: &prio})
				w.must(err)
			},
			want: []want{{events.ItemUpdated, "token:alice", map[string]any{"title": "new", "priority": 5.0, "version": 2.0}}}},
		{name: "DependencyBlocks",
			setup: func(w *world) state { return state{items: []graph.Item{w.item("a"), w.item("b")}} },
			change: func(w *world, s state) {
				w.must(w.graph.AddDependency(w.ctx, w.project, s.items[1].ID, s.items[0].ID, "token:carol"))
			},
			want: []want{{events.ItemStateChanged, "token:carol", map[string]any{"from": "ready", "to": "blocked"}}}},
		{name: "DependencyRemovedFrees",
			setup: func(w *world) state {
				a := w.item("a")
				return state{items: []graph.Item{a, w.item("b", a.ID)}}
			},
			change: func(w *world, s state) {
				w.must(w.graph.RemoveDependency(w.ctx, w.project, s.items[1].ID, s.items[0].ID))
			},
			want: []want{{events.ItemStateChanged, "token:alice", map[string]any{"from": "blocked", "to": "ready"}}}},
		{name: "Claimed",
			setup:  func(w *world) state { return state{items: []graph.Item{w.item("a")}} },
			change: func(w *world, s state) { w.claim("w1") },
			want: []want{
				{events.LeaseGranted, "worker:w1", map[string]any{"worker": "w1", "epoch": 1.0}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "ready", "to": "leased", "epoch": 1.0}},
			}},
		{name: "HeartbeatIsNoEvent",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Heartbeat(w.ctx, w.project, fenceOf(s.lease), lease.Heartbeat{Progress: json.RawMessage(`{"p":1}`)})
				w.must(err)
			},
			want: nil},
		{name: "Completed",
			setup: func(w *world) state {
				a := w.item("a")
				b := w.item("b", a.ID)
				return state{items: []graph.Item{a, b}, lease: w.claim("w1")}
			},
			change: func(w *world, s state) {
				_, err := w.leases.Complete(w.ctx, w.project, fenceOf(s.lease), json.RawMessage(`{"ok":true}`), nil)
				w.must(err)
			},
			want: []want{
				{events.LeaseEnded, "worker:w1", map[string]any{"outcome": "completed"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "leased", "to": "done"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "blocked", "to": "ready"}},
			}},
		{name: "Released",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Release(w.ctx, w.project, fenceOf(s.lease), "later")
				w.must(err)
			},
			want: []want{
				{events.LeaseEnded, "worker:w1", map[string]any{"outcome": "released"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "leased", "to": "ready"}},
			}},
		{name: "Failed",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Fail(w.ctx, w.project, fenceOf(s.lease), lease.Failure{Message: "boom"})
				w.must(err)
			},
			want: []want{
				{events.LeaseEnded, "worker:w1", map[string]any{"outcome": "failed"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "leased", "to": "blocked"}},
			}},
		{name: "Decomposed",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Decompose(w.ctx, w.project, fenceOf(s.lease), []graph.NewChild{{Key: "x", Title: "x"}, {Key: "y", Title: "y", DependsOnKeys: []string{"x"}}})
				w.must(err)
			},
			want: []want{
				{events.ItemCreated, "token:agent", map[string]any{"title": "x", "state": "ready"}},
				{events.ItemCreated, "token:agent", map[string]any{"title": "y", "state": "blocked"}},
				{events.LeaseEnded, "worker:w1", map[string]any{"outcome": "decomposed"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "leased", "to": "blocked"}},
			}},
		{name: "AskedBlocking",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Ask(w.ctx, w.project, fenceOf(s.lease), attention.NewRequest{Question: "which?", Blocking: true, RequestedBy: "token:agent"})
				w.must(err)
			},
			want: []want{
				{events.AttentionOpened, "worker:w1", map[string]any{"reason": "question", "blocking": true}},
				{events.LeaseEnded, "worker:w1", map[string]any{"outcome": "attention_requested"}},
				{events.ItemStateChanged, "worker:w1", map[string]any{"from": "leased", "to": "attention"}},
			}},
		{name: "AskedNonBlocking",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				_, err := w.leases.Ask(w.ctx, w.project, fenceOf(s.lease), attention.NewRequest{Question: "fyi?"})
				w.must(err)
			},
			want: []want{{events.AttentionOpened, "worker:w1", map[string]any{"blocking": false}}}},
		{name: "Answered",
			setup: func(w *world) state {
				w.item("a")
				l := w.claim("w1")
				r, err := w.leases.Ask(w.ctx, w.project, fenceOf(l), attention.NewRequest{Question: "which?", Blocking: true})
				w.must(err)
				return state{req: r.Request}
			},
			change: func(w *world, s state) {
				_, err := w.att.Resolve(w.ctx, w.project, s.req.ID, "the left one", "token:bob")
				w.must(err)
			},
			want: []want{
				{events.AttentionAnswer, "token:bob", map[string]any{"attention_id": nil}},
				{events.ItemStateChanged, "token:bob", map[string]any{"from": "attention", "to": "ready"}},
			}},
		{name: "Dismissed",
			setup: func(w *world) state {
				it := w.item("a")
				r, err := w.att.Hold(w.ctx, w.project, it.ID, "wait", "token:bob")
				w.must(err)
				return state{req: r}
			},
			change: func(w *world, s state) {
				_, err := w.att.Dismiss(w.ctx, w.project, s.req.ID, "token:carol", "no need")
				w.must(err)
			},
			want: []want{
				{events.AttentionDismiss, "token:carol", map[string]any{"reason": "hold"}},
				{events.ItemStateChanged, "token:carol", map[string]any{"from": "attention", "to": "ready"}},
			}},
		{name: "Held",
			setup: func(w *world) state { return state{items: []graph.Item{w.item("a")}} },
			change: func(w *world, s state) {
				_, err := w.att.Hold(w.ctx, w.project, s.items[0].ID, "wait", "token:bob")
				w.must(err)
			},
			want: []want{
				{events.ItemStateChanged, "token:bob", map[string]any{"from": "ready", "to": "attention"}},
				{events.AttentionOpened, "token:bob", map[string]any{"reason": "hold", "source": "person"}},
			}},
		{name: "CancelledWhileLeased",
			setup: func(w *world) state {
				it := w.item("a")
				return state{items: []graph.Item{it}, lease: w.claim("w1")}
			},
			change: func(w *world, s state) {
				_, err := w.graph.Cancel(w.ctx, w.project, s.items[0].ID, "token:dana", "obsolete")
				w.must(err)
			},
			want: []want{
				{events.LeaseEnded, "token:dana", map[string]any{"outcome": "cancelled"}},
				{events.ItemStateChanged, "token:dana", map[string]any{"from": "leased", "to": "cancelled"}},
			}},
		{name: "CancelledWithAQuestion",
			setup: func(w *world) state {
				it := w.item("a")
				_, err := w.att.Hold(w.ctx, w.project, it.ID, "wait", "token:bob")
				w.must(err)
				return state{items: []graph.Item{it}}
			},
			change: func(w *world, s state) {
				_, err := w.graph.Cancel(w.ctx, w.project, s.items[0].ID, "token:dana", "obsolete")
				w.must(err)
			},
			want: []want{
				{events.ItemStateChanged, "token:dana", map[string]any{"from": "attention", "to": "cancelled"}},
				{events.AttentionDismiss, "token:dana", nil},
			}},
		{name: "ExpiredBySweeper",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				w.clock.Advance(2 * leaseTTL)
				_, err := w.leases.ReapExpired(w.ctx, w.project, 10)
				w.must(err)
			},
			want: []want{
				{events.LeaseEnded, "system", map[string]any{"outcome": "expired", "worker": "w1"}},
				{events.ItemStateChanged, "system", map[string]any{"from": "leased", "to": "ready"}},
			}},
		{name: "ExpiredByTheNextClaim",
			setup: func(w *world) state { w.item("a"); return state{lease: w.claim("w1")} },
			change: func(w *world, s state) {
				w.clock.Advance(2 * leaseTTL)
				w.claim("w2")
			},
			// The item goes from leased (w1) to leased (w2): no state change.
			want: []want{
				{events.LeaseEnded, "system", map[string]any{"outcome": "expired", "worker": "w1"}},
				{events.LeaseGranted, "worker:w2", map[string]any{"epoch": 2.0}},
			}},
		{name: "StaleCallRefused",
			setup: func(w *world) state {
				w.item("a")
				l := w.claim("w1")
				_, err := w.leases.Release(w.ctx, w.project, fenceOf(l), "")
				w.must(err)
				return state{lease: l}
			},
			change: func(w *world, s state) {
				_, err := w.leases.Heartbeat(w.ctx, w.project, fenceOf(s.lease), lease.Heartbeat{})
				if err == nil {
					w.t.Fatal("a heartbeat of an ended lease succeeded")
				}
			},
			want: []want{{events.LeaseRefused, "worker:w1", map[string]any{"operation": "heartbeat", "kind": "stale_call", "calls": 1.0}}}},
		{name: "PlanImported",
			setup: func(w *world) state { return state{} },
			change: func(w *world, s state) {
				_, err := w.graph.ImportPlan(w.ctx, w.project, []graph.PlanItem{
					{Key: "p", Title: "parent", Children: []graph.PlanItem{{Key: "c", Title: "child"}}},
				}, "token:erin", false)
				w.must(err)
			},
			want: []want{
				{events.ItemCreated, "token:erin", map[string]any{"title": "parent", "state": "blocked"}},
				{events.ItemCreated, "token:erin", map[string]any{"title": "child", "state": "ready"}},
				{events.PlanImported, "token:erin", map[string]any{"created": 2.0}},
			}},
		{name: "TokenCreated",
			setup: func(w *world) state { return state{} },
			change: func(w *world, s state) {
				_, _, err := w.auth.Create(w.ctx, &w.project, "bot", auth.RoleAgent)
				w.must(err)
			},
			want: []want{{events.TokenCreated, "token:alice", map[string]any{"name": "bot", "role": "agent"}}}},
		{name: "TokenRevoked",
			setup: func(w *world) state {
				tok, _, err := w.auth.Create(w.ctx, &w.project, "bot", auth.RoleAgent)
				w.must(err)
				return state{token: tok}
			},
			change: func(w *world, s state) {
				_, err := w.auth.Revoke(w.ctx, w.project, s.token.ID)
				w.must(err)
				_, err = w.auth.Revoke(w.ctx, w.project, s.token.ID) // a repeat changes nothing
				w.must(err)
			},
			want: []want{{events.TokenRevoked, "token:alice", map[string]any{"name": "bot"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := project(t, pool)
			var t0 time.Time
			if err := pool.QueryRow(context.Background(), "SELECT now()").Scan(&t0); err != nil {
				t.Fatal(err)
			}
			clk := clock.NewStub(t0)
			s := tc.setup(on(t, pool, clk, p))
			mark := lastSeq(t, pool, p)

			sp, err := pool.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Rollback(context.Background())
			tc.change(on(t, sp, clk, p), s)
			got := eventsAfter(t, sp, p, mark)
			if len(got) != len(tc.want) {
				t.Fatalf("the change wrote %d events, want %d:\n%s", len(got), len(tc.want), describe(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Type != w.typ || g.Actor != w.actor {
					t.Errorf("event %d is %s by %s, want %s by %s\n%s", i, g.Type, g.Actor, w.typ, w.actor, describe(got))
				}
				var payload map[string]any
				if err := json.Unmarshal(g.Payload, &payload); err != nil {
					t.Fatal(err)
				}
				for k, v := range w.payload {
					if _, ok := payload[k]; !ok {
						t.Errorf("event %d (%s) has no payload field %s: %s", i, g.Type, k, g.Payload)
					} else if v != nil && payload[k] != v {
						t.Errorf("event %d (%s): payload %s = %v, want %v", i, g.Type, k, payload[k], v)
					}
				}
			}
			if err := sp.Rollback(context.Background()); err != nil {
				t.Fatal(err)
			}
			if left := eventsAfter(t, pool, p, mark); len(left) != 0 {
				t.Fatalf("the rolled-back change left events:\n%s", describe(left))
			}
		})
	}
}

func lastSeq(t *testing.T, tx db.DBTX, p uuid.UUID) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM events WHERE project_id = $1`, p).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func eventsAfter(t *testing.T, tx db.DBTX, p uuid.UUID, after int64) []events.Event {
	t.Helper()
	got, err := events.List(context.Background(), tx, p, events.Filter{After: after, UpTo: 1 << 62, Limit: events.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func describe(evs []events.Event) string {
	out := ""
	for _, e := range evs {
		out += fmt.Sprintf("  %d %s by %s %s\n", e.Seq, e.Type, e.Actor, e.Payload)
	}
	return out
}
