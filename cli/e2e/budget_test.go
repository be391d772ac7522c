package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestItemsBudget: `workgraph items budget` through the real binary and a
// real server: an item without a budget, setting one (a person; an agent
// is refused), the cost reported by heartbeats under it, a spent budget
// (the heartbeat told to stop, the command saying SPENT, one
// budget_exhausted request), raising it again, and the depth limit
// refusing a child too deep.
func TestItemsBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	root := e.item("the whole job")
	var child client.Item
	e.mustJSON(e.agentToken, &child, "items", "add", "a part", "--parent", root.ID)

	if r := e.run(e.humanToken, nil, "items", "budget", root.ID); r.code != 0 || !strings.Contains(r.stdout, "budget:  none") {
		t.Fatalf("items budget without one: %v", r)
	}
	e.wantExit(e.agentToken, 7, "forbidden", "items", "budget", root.ID, "--max-tokens", "100")
	e.wantExit(e.humanToken, 2, "max_depth", "items", "budget", root.ID, "--max-depth", "-1")
	r := e.run(e.humanToken, nil, "items", "budget", root.ID, "--max-tokens", "100", "--max-cost-usd", "2.5", "--max-wall", "90m", "--max-depth", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "budget:  100 tokens, $2.50, 1h30m wall time, depth 1; within") {
		t.Fatalf("items budget set: %v", r)
	}
	var cost client.ItemCost
	e.mustJSON(e.humanToken, &cost, "items", "budget", root.ID)
	if b := cost.Budget; b == nil || b.MaxTokens == nil || *b.MaxTokens != 100 || b.MaxDepth == nil || *b.MaxDepth != 1 || b.Spent {
		t.Fatalf("budget after setting it: %+v", cost.Budget)
	}

	// The depth limit: the part is at depth 1, its child would be at 2.
	if r := e.run(e.agentToken, nil, "items", "add", "too deep", "--parent", child.ID); r.code != 6 || !strings.Contains(r.stderr, "depth") {
		t.Fatalf("items add below the depth limit: %v", r)
	}

	// Work under the budget reports its usage.
	var cl client.Claim
	e.mustJSON(e.agentToken, &cl, "claim", "--worker", "w1")
	if cl.Item.ID != child.ID {
		t.Fatalf("claimed %s, want the part %s", cl.Item.ID, child.ID)
	}
	fence := []string{"WORKGRAPH_LEASE_ID=" + cl.Lease.ID, "WORKGRAPH_EPOCH=1"}
	if r := e.run(e.agentToken, fence, "heartbeat", "--usage", `{"tokens_in": 40, "tokens_out": 20, "cost_usd": 0.5}`); r.code != 0 || r.stderr != "" {
		t.Fatalf("heartbeat within the budget: %v", r)
	}
	r = e.run(e.humanToken, nil, "items", "budget", root.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "subtree: 40 tokens in, 20 out, $0.5000") || !strings.Contains(r.stdout, "; within") {
		t.Fatalf("items budget after 60 tokens: %v", r)
	}

	// Crossing it: the heartbeat says stop, the command says SPENT, and
	// one budget_exhausted request waits.
	if r := e.run(e.agentToken, fence, "heartbeat", "--usage", `{"tokens_in": 90}`); r.code != 0 || !strings.Contains(r.stderr, "budget of this item's subtree is spent") {
		t.Fatalf("heartbeat past the budget: %v", r)
	}
	r = e.run(e.humanToken, nil, "items", "budget", root.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "SPENT") || !strings.Contains(r.stdout, "subtree: 90 tokens in, 20 out") {
		t.Fatalf("items budget once spent: %v", r)
	}
	e.mustJSON(e.humanToken, &cost, "items", "budget", root.ID)
	if cost.Budget == nil || !cost.Budget.Spent || cost.Budget.RequestID == nil {
		t.Fatalf("spent budget: %+v", cost.Budget)
	}
	requests := func(state string) int {
		t.Helper()
		page, err := e.human.ListAttention(ctx, e.project, client.ListAttentionOptions{ItemID: root.ID, State: state})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range page.Attention {
			if a.Reason == "budget_exhausted" && a.State == state {
				n++
			}
		}
		return n
	}
	if n := requests("open"); n != 1 {
		t.Fatalf("%d open budget_exhausted requests, want 1", n)
	}

	// Raising it resolves the request and the budget is within again (a
	// PUT: the limits given are the budget's limits).
	r = e.run(e.humanToken, nil, "items", "budget", root.ID, "--max-tokens", "1000", "--max-cost-usd", "2.5", "--max-depth", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "budget:  1000 tokens, $2.50, depth 1; within") {
		t.Fatalf("items budget raised: %v", r)
	}
	if open, resolved := requests("open"), requests("resolved"); open != 0 || resolved != 1 {
		t.Fatalf("after raising the budget: %d open and %d resolved budget_exhausted requests, want 0 and 1", open, resolved)
	}
}
