package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/server"
)

// uncertainAttn is an attention request as an uncertain outcome shows it.
type uncertainAttn struct {
	attn
	Reason           string            `json:"reason"`
	Decision         *string           `json:"decision"`
	ResolvedBy       *string           `json:"resolved_by"`
	SuggestedAnswers []string          `json:"suggested_answers"`
	LateReports      []json.RawMessage `json:"late_reports"`
}

func TestOnExpiryReconcile(t *testing.T) {
	t.Parallel()
	stub := clock.NewStub(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := setup(t, func(c *server.Config) { c.Clock = stub })
	e.mustProject("alpha")
	f := itemFixture{env: e, agent: e.mustToken("alpha", "bot", "agent"), human: e.mustToken("alpha", "ann", "human")}

	t.Run("ProjectDefault", func(t *testing.T) {
		f.do("PATCH", "/v1/projects/alpha", f.human.Token, map[string]any{"on_expiry": "reconcile"}).problem(t, 403, "forbidden")
		field(t, f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"on_expiry": "sometimes"}).problem(t, 400, "invalid_argument"), "on_expiry")
		field(t, f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{}).problem(t, 400, "invalid_argument"), "on_expiry")
		var p struct {
			OnExpiry string `json:"on_expiry"`
		}
		f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"on_expiry": "reconcile"}).ok(t, 200, &p)
		if p.OnExpiry != "reconcile" {
			t.Fatalf("project on_expiry = %q", p.OnExpiry)
		}
		f.do("GET", "/v1/projects/alpha", f.agent.Token, nil).ok(t, 200, &p)
		if p.OnExpiry != "reconcile" {
			t.Fatalf("read back: project on_expiry = %q", p.OnExpiry)
		}
		field(t, f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "x", "on_expiry": "sometimes"}).problem(t, 400, "invalid_argument"), "on_expiry")
		if n := f.count("SELECT count(*) FROM items"); n != 0 {
			t.Fatal("a refused item was stored")
		}
	})

	// expire claims the one ready item as w1, lets the lease expire, and
	// has w2's claim reap it: nothing to hand out, the item waits.
	expire := func(t *testing.T) (claimed, uncertainAttn) {
		t.Helper()
		var c claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w1", "lease_seconds": 30}).ok(t, 201, &c)
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch, "progress": map[string]any{"pct": 90}}).ok(t, 200, nil)
		stub.Advance(31 * time.Second)
		f.claim(f.agent.Token, map[string]any{"worker": "w2"}).ok(t, 204, nil)
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &got)
		if got.State != "attention" {
			t.Fatalf("item state %s, want attention", got.State)
		}
		var page struct{ Attention []uncertainAttn }
		f.do("GET", "/v1/projects/alpha/attention?state=open&item_id="+c.Item.ID, f.human.Token, nil).ok(t, 200, &page)
		if len(page.Attention) != 1 || page.Attention[0].Reason != "uncertain_outcome" || len(page.Attention[0].SuggestedAnswers) != 3 {
			t.Fatalf("open requests %+v", page.Attention)
		}
		// The old worker reports late: refused, and shown to whoever decides.
		f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch, "result": "late"}).problem(t, 409, "lease_lost")
		var r uncertainAttn
		f.do("GET", "/v1/attention/"+page.Attention[0].ID, f.human.Token, nil).ok(t, 200, &r)
		if len(r.LateReports) != 1 {
			t.Fatalf("late reports %s, want the late completion", r.LateReports)
		}
		return c, r
	}

	t.Run("Done", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "deploy"})
		c, r := expire(t)
		path := "/v1/attention/" + r.ID + "/resolve"
		field(t, f.do("POST", path, f.human.Token, map[string]any{"answer": "ok"}).problem(t, 400, "invalid_argument"), "decision")
		field(t, f.do("POST", path, f.human.Token, map[string]any{"decision": "maybe"}).problem(t, 400, "invalid_argument"), "decision")
		f.do("POST", path, f.agent.Token, map[string]any{"decision": "done"}).problem(t, 403, "forbidden")
		var out uncertainAttn
		f.do("POST", path, f.human.Token, map[string]any{"decision": "done", "result": map[string]any{"deployed": true}, "note": "checked the dashboard"}).ok(t, 200, &out)
		if out.Decision == nil || *out.Decision != "done" || out.ResolvedBy == nil || len(out.LateReports) != 1 {
			t.Fatalf("resolved %+v", out)
		}
		var got struct {
			State  string          `json:"state"`
			Result json.RawMessage `json:"result"`
		}
		f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &got)
		if got.State != "done" || string(got.Result) != `{"deployed":true}` {
			t.Fatalf("item %+v, want done with the person's result", got)
		}
		f.do("POST", path, f.human.Token, map[string]any{"decision": "retry"}).problem(t, 409, "conflict")
	})

	// A done decision on an item that gained a dependency on an open item
	// while it waited is 409 blocked naming it; nothing changes (the
	// request stays open); once the dependency is done it goes through.
	t.Run("DoneBlocked", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "release"})
		c, r := expire(t)
		pre := f.mustItem(f.human.Token, map[string]any{"title": "prerequisite", "labels": []string{"later"}})
		f.do("POST", "/v1/projects/alpha/items/"+c.Item.ID+"/dependencies", f.human.Token, map[string]any{"depends_on": pre.ID}).ok(t, 201, nil)
		path := "/v1/attention/" + r.ID + "/resolve"
		p := f.do("POST", path, f.human.Token, map[string]any{"decision": "done"}).problem(t, 409, "blocked")
		if deps, _ := p["dependencies"].([]any); len(deps) != 1 || deps[0] != pre.ID || p["item_id"] != c.Item.ID {
			t.Errorf("blocked problem %v: want dependencies [%s], item_id %s", p, pre.ID, c.Item.ID)
		}
		var open uncertainAttn
		f.do("GET", "/v1/attention/"+r.ID, f.human.Token, nil).ok(t, 200, &open)
		if open.Decision != nil || open.ResolvedBy != nil {
			t.Fatalf("the refused decision resolved the request: %+v", open)
		}
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &got)
		if got.State != "attention" {
			t.Fatalf("item state %s, want attention", got.State)
		}
		f.do("POST", path, f.human.Token, map[string]any{"decision": "cancel"}).ok(t, 200, nil)
		f.do("POST", "/v1/projects/alpha/items/"+pre.ID+"/cancel", f.human.Token, map[string]any{}).ok(t, 200, nil)
	})

	t.Run("RetryItemSetting", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "migrate", "on_expiry": "reconcile"})
		c, r := expire(t)
		f.do("POST", "/v1/attention/"+r.ID+"/resolve", adminToken, map[string]any{"decision": "retry"}).ok(t, 200, nil)
		var c2 claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w2"}).ok(t, 201, &c2)
		if c2.Item.ID != c.Item.ID || c2.Lease.Epoch != c.Lease.Epoch+1 {
			t.Fatalf("re-claim %+v, want item %s at epoch %d", c2.Lease, c.Item.ID, c.Lease.Epoch+1)
		}
		f.mutate(f.agent.Token, c2.Lease.ID, "complete", map[string]any{"epoch": c2.Lease.Epoch}).ok(t, 200, nil)
	})

	t.Run("ItemRetryOverridesProject", func(t *testing.T) {
		it := f.mustItem(f.agent.Token, map[string]any{"title": "idempotent", "on_expiry": "retry"})
		var c claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w1", "lease_seconds": 30}).ok(t, 201, &c)
		stub.Advance(31 * time.Second)
		var c2 claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w2"}).ok(t, 201, &c2)
		if c2.Item.ID != it.ID || c2.Lease.Epoch != c.Lease.Epoch+1 {
			t.Fatalf("re-claim %+v", c2.Lease)
		}
		var patched struct {
			OnExpiry *string `json:"on_expiry"`
		}
		f.do("PATCH", "/v1/projects/alpha/items/"+it.ID, f.human.Token, map[string]any{"on_expiry": nil}).ok(t, 200, &patched)
		if patched.OnExpiry != nil {
			t.Fatalf("on_expiry after null = %v, want null (the project's)", *patched.OnExpiry)
		}
	})
}
