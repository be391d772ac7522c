package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestCostAndLiveness: the item page shows its own and subtree cost and
// its budget; the workers page shows each worker's usage and each live
// lease's liveness.
func TestCostAndLiveness(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	root := e.mustItem("root")
	if _, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "child", ParentID: &root.ID, CreatedBy: "t"}); err != nil {
		t.Fatal(err)
	}
	tokens := int64(5000)
	if _, err := e.leases.SetBudget(ctx, e.project.ID, root.ID, lease.BudgetLimits{MaxTokens: &tokens}, "ann"); err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-costly"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Heartbeat(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		lease.Heartbeat{Usage: lease.Usage{TokensIn: 1200, TokensOut: 34, CostUSD: 0.5}}); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/items/" + root.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="cost"`, "<dt>This item</dt><dd>0 tokens", "<dt>With its subtree</dt><dd>1234 tokens · $0.5000", "5000 tokens")
	r = b.get("/p/acme/workers")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `<td class="num">1234</td>`, "$0.50", "liveness-healthy")
}
