package api_test

import (
	"testing"

	"github.com/workgraph-dev/workgraph/wire"
)

// TestBudgetAPI: a budget set through the API stops its subtree's
// heartbeats and opens one request; the item's cost, the workers answer
// and a raise show through the API.
func TestBudgetAPI(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	root := f.mustItem(f.human.Token, map[string]any{"title": "root"})
	f.mustItem(f.human.Token, map[string]any{"title": "child", "parent_id": root.ID})
	path := "/v1/projects/alpha/items/" + root.ID + "/budget"

	t.Run("ErrForbidden", func(t *testing.T) {
		f.do("PUT", path, f.agent.Token, map[string]any{"max_tokens": 100}).problem(t, 403, "forbidden")
	})
	t.Run("ErrNoBudget", func(t *testing.T) {
		f.do("GET", path, f.human.Token, nil).problem(t, 404, "not_found")
	})
	var b wire.Budget
	f.do("PUT", path, f.human.Token, map[string]any{"max_tokens": 100, "max_depth": 2}).ok(t, 200, &b)
	if b.MaxTokens == nil || *b.MaxTokens != 100 || b.Spent {
		t.Fatalf("budget %+v", b)
	}
	t.Run("ErrInvalid", func(t *testing.T) {
		field(t, f.do("PUT", path, f.human.Token, map[string]any{"max_tokens": -1}).problem(t, 400, "invalid_argument"), "max_tokens")
		field(t, f.do("PUT", path, f.human.Token, map[string]any{"max_wall_seconds": 0}).problem(t, 400, "invalid_argument"), "max_wall_seconds")
		f.do("GET", path, f.human.Token, nil).ok(t, 200, &b)
		if *b.MaxTokens != 100 {
			t.Fatalf("a refused budget changed it: %+v", b)
		}
	})

	c := f.mustClaim("w")
	var hb wire.Heartbeat
	t.Run("ErrUsage", func(t *testing.T) {
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{
			"epoch": c.Lease.Epoch, "usage": map[string]any{"tokens_in": -5},
		}).problem(t, 400, "invalid_argument"), "usage")
	})
	f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{
		"epoch": c.Lease.Epoch, "usage": map[string]any{"tokens_in": 120, "cost_usd": 0.5},
	}).ok(t, 200, &hb)
	if !hb.StopRequested || hb.StopReason == nil || *hb.StopReason != "budget_exhausted" || hb.Lease.Usage.TokensIn != 120 {
		t.Fatalf("heartbeat over the budget: %+v", hb)
	}
	if n := f.count(`SELECT count(*) FROM attention_requests WHERE reason = 'budget_exhausted' AND item_id = $1`, root.ID); n != 1 {
		t.Fatalf("%d budget_exhausted requests, want 1", n)
	}

	t.Run("Cost", func(t *testing.T) {
		var cost wire.ItemCost
		f.do("GET", "/v1/projects/alpha/items/"+root.ID+"/cost", f.agent.Token, nil).ok(t, 200, &cost)
		if cost.Own.TokensIn != 0 || cost.Subtree.TokensIn != 120 || cost.Subtree.CostUSD != 0.5 || cost.Budget == nil || !cost.Budget.Spent {
			t.Fatalf("cost %+v", cost)
		}
	})
	t.Run("Workers", func(t *testing.T) {
		var w wire.Workers
		f.do("GET", "/v1/projects/alpha/workers", f.human.Token, nil).ok(t, 200, &w)
		if len(w.Workers) != 1 || w.Workers[0].Usage.TokensIn != 120 || len(w.Activity) != 1 || w.Activity[0].Liveness != "healthy" {
			t.Fatalf("workers %+v", w)
		}
	})
	t.Run("RaiseContinues", func(t *testing.T) {
		f.do("PUT", path, f.human.Token, map[string]any{"max_tokens": 1000}).ok(t, 200, &b)
		if b.Spent || b.RequestID != nil {
			t.Fatalf("raised budget %+v", b)
		}
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, &hb)
		if hb.StopRequested || hb.StopReason != nil {
			t.Fatalf("heartbeat after the raise: %+v", hb)
		}
	})
	t.Run("ProjectProgressSettings", func(t *testing.T) {
		var p wire.Project
		f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"quiet_after_seconds": 120, "no_progress_after_seconds": 600}).ok(t, 200, &p)
		if p.QuietAfterSeconds != 120 || p.NoProgressAfterSeconds == nil || *p.NoProgressAfterSeconds != 600 {
			t.Fatalf("project %+v", p)
		}
		field(t, f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"quiet_after_seconds": 0}).problem(t, 400, "invalid_argument"), "quiet_after_seconds")
	})
}

// TestBudgetDepthAPI: the depth limit answers 409 depth_limit on every
// path that creates a child: an item with a parent_id, a plan adding
// items below a stored item (a dry run too), and nothing is created.
func TestBudgetDepthAPI(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	tree := map[string]any{"items": []any{
		map[string]any{"key": "top", "title": "top", "children": []any{map[string]any{"key": "mid", "title": "mid"}}},
	}}
	var imported struct{ Keys map[string]string }
	f.do("POST", "/v1/projects/alpha/plans", f.human.Token, tree).ok(t, 201, &imported)
	top, mid := imported.Keys["top"], imported.Keys["mid"]
	f.do("PUT", "/v1/projects/alpha/items/"+top+"/budget", f.human.Token, map[string]any{"max_depth": 1}).ok(t, 200, nil)
	before := f.count(`SELECT count(*) FROM items`)

	p := f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "deep", "parent_id": mid}).problem(t, 409, "depth_limit")
	if p["field"] != "parent_id" || p["budget_item_id"] != top || p["max_depth"] != float64(1) || p["depth"] != float64(2) {
		t.Fatalf("item below the limit: %v", p)
	}
	deeper := map[string]any{"items": []any{
		map[string]any{"key": "top", "title": "top", "children": []any{
			map[string]any{"key": "mid", "title": "mid", "children": []any{map[string]any{"key": "deep", "title": "deep"}}},
		}},
	}}
	for _, dry := range []bool{true, false} {
		deeper["dry_run"] = dry
		p = f.do("POST", "/v1/projects/alpha/plans", f.human.Token, deeper).problem(t, 409, "depth_limit")
		if p["field"] != "plan" || p["key"] != "deep" || p["depth"] != float64(2) {
			t.Fatalf("plan below the limit (dry run %v): %v", dry, p)
		}
	}
	if after := f.count(`SELECT count(*) FROM items`); after != before {
		t.Fatalf("refused creations stored items: %d before, %d after", before, after)
	}
	// At the limit is fine.
	f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "sibling", "parent_id": top}).ok(t, 201, nil)
}
