package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
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

// TestBudgetForms: a person sets and raises a budget in the web UI. The
// item page sets one; a spent budget's request in the inbox is answered by
// raising it (no answer box: an answer in words would close the request
// and leave the subtree stopped), which closes the request and lets the
// work continue; bad input changes nothing and says why.
func TestBudgetForms(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	root := e.mustItem("budgeted root")
	if _, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "child", ParentID: &root.ID, CreatedBy: "t"}); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	itemPath := "/p/acme/items/" + root.ID.String()
	r := b.get(itemPath)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Set a budget", `action="/p/acme/items/`+root.ID.String()+`/budget"`, `name="max_tokens"`, `name="max_wall"`)

	t.Run("BadInputChangesNothing", func(t *testing.T) {
		for _, form := range []url.Values{
			{"max_tokens": {"lots"}},
			{"max_wall": {"4 hours"}},
			{"max_cost_usd": {"-3"}},
			{"max_depth": {"2000"}},
			// A decimal comma is not a thousands separator: "2,50" is
			// not $250, and "2,5" tokens not 25.
			{"max_cost_usd": {"2,50"}},
			{"max_tokens": {"2,5"}},
			{"max_depth": {"1,0"}},
		} {
			r := b.post(itemPath+"/budget", form)
			wantStatus(t, r, http.StatusSeeOther)
			if loc := r.Header.Get("Location"); loc != itemPath {
				t.Errorf("%v: Location = %q, want the item page", form, loc)
			}
			page := b.get(itemPath)
			wantBody(t, page, "Budget not changed")
			if _, err := e.leases.Budget(ctx, e.project.ID, root.ID); wgerr.CodeOf(err) != wgerr.CodeNotFound {
				t.Fatalf("%v: a budget was stored (%v)", form, err)
			}
		}
	})

	r = b.post(itemPath+"/budget", url.Values{"max_tokens": {"1,000"}, "max_cost_usd": {"$2.50"}, "max_wall": {"4h"}, "max_depth": {""}})
	wantStatus(t, r, http.StatusSeeOther)
	bud, err := e.leases.Budget(ctx, e.project.ID, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if l := bud.Limits; l.MaxTokens == nil || *l.MaxTokens != 1000 || l.MaxCostUSD == nil || *l.MaxCostUSD != 2.5 ||
		l.MaxWall == nil || *l.MaxWall != 4*time.Hour || l.MaxDepth != nil {
		t.Fatalf("budget = %+v, want 1000 tokens, $2.50, 4h, no depth limit", l)
	}
	r = b.get(itemPath)
	wantBody(t, r, "Budget set for", "Change the budget", `name="max_tokens" inputmode="numeric" value="1000"`, `name="max_wall" value="4h"`)

	// Spend it.
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-spender"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Heartbeat(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		lease.Heartbeat{Usage: lease.Usage{TokensIn: 1500}}); err != nil {
		t.Fatal(err)
	}
	bud, err = e.leases.Budget(ctx, e.project.ID, root.ID)
	if err != nil || !bud.Spent || bud.RequestID == nil {
		t.Fatalf("budget after spending = %+v, %v; want spent with a request", bud, err)
	}
	reqID := *bud.RequestID

	r = b.get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Raise the budget", `action="/p/acme/items/`+root.ID.String()+`/budget"`, `value="1000"`)
	if strings.Contains(r.body, `action="/p/acme/attention/`+reqID.String()+`/resolve"`) {
		t.Fatal("the inbox offers an answer in words to a budget_exhausted request")
	}
	// The system asked: said once, not "system (system)".
	wantBody(t, r, "asked by <b>system</b></span>")
	// An answer posted anyway is refused and changes nothing.
	r = b.post("/p/acme/attention/"+reqID.String()+"/resolve", url.Values{"answer": {"go on"}})
	wantStatus(t, r, http.StatusConflict)
	if got, _ := e.att.Get(ctx, e.project.ID, reqID); got.State != attention.StateOpen {
		t.Fatalf("request after a refused answer: %s, want open", got.State)
	}

	// Raising it from the inbox: back to the inbox, the request closed.
	r = b.post(itemPath+"/budget", url.Values{"max_tokens": {"5000"}, "max_cost_usd": {"2.5"}, "max_wall": {"4h"}, "back": {"/p/acme/inbox"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/p/acme/inbox" {
		t.Fatalf("Location = %q, want the inbox", loc)
	}
	r = b.get("/p/acme/inbox")
	wantBody(t, r, "Budget raised: its request is closed")
	if got, _ := e.att.Get(ctx, e.project.ID, reqID); got.State != attention.StateResolved {
		t.Fatalf("request after the raise: %s, want resolved", got.State)
	}
	if bud, err := e.leases.Budget(ctx, e.project.ID, root.ID); err != nil || bud.Spent {
		t.Fatalf("budget after the raise = %+v, %v; want not spent", bud, err)
	}
}

// TestBudgetFormNumbers: the budget form takes numbers as people write
// them, thousands grouped and a wall time with spaces, and reads a decimal
// comma as nothing (BadInputChangesNothing), never as a separator.
func TestBudgetFormNumbers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	root := e.mustItem("root")
	b := e.signIn(e.human)
	r := b.post("/p/acme/items/"+root.ID.String()+"/budget", url.Values{
		"max_tokens": {"2 000 000"}, "max_cost_usd": {"$1,000.50"}, "max_wall": {"1h 30m"}, "max_depth": {"2"}})
	wantStatus(t, r, http.StatusSeeOther)
	bud, err := e.leases.Budget(context.Background(), e.project.ID, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := bud.Limits
	if l.MaxTokens == nil || *l.MaxTokens != 2_000_000 || l.MaxCostUSD == nil || *l.MaxCostUSD != 1000.5 ||
		l.MaxWall == nil || *l.MaxWall != 90*time.Minute || l.MaxDepth == nil || *l.MaxDepth != 2 {
		t.Fatalf("budget = %+v, want 2000000 tokens, $1000.50, 1h30m, depth 2", l)
	}
}

// TestSpentBudgetExplained: a ready item under a spent budget says so on
// its page (it is not handed out), with a link to the budget's item, and
// stops saying so once the budget is raised.
func TestSpentBudgetExplained(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	root := e.mustItem("the root")
	a, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "spender", ParentID: &root.ID, CreatedBy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "left waiting", ParentID: &root.ID, CreatedBy: "t", Priority: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.SetBudget(ctx, e.project.ID, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](10)}, "ann"); err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w"})
	if err != nil || c.Item.ID != a.ID {
		t.Fatalf("claim = %+v, %v; want the spender", c.Item, err)
	}
	if _, err := e.leases.Heartbeat(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		lease.Heartbeat{Usage: lease.Usage{TokensIn: 50}}); err != nil {
		t.Fatal(err)
	}
	it, err := e.graph.Item(ctx, e.project.ID, waiting.ID)
	if err != nil {
		t.Fatal(err)
	}
	if it.State != graph.StateReady || len(it.BlockedBy.Budgets) != 1 || it.BlockedBy.Budgets[0].ID != root.ID {
		t.Fatalf("item under the spent budget: state %s, budgets %+v; want ready with the root's budget", it.State, it.BlockedBy.Budgets)
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/items/" + waiting.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Why it can't be claimed yet", `class="budget-spent"`, `href="/p/acme/items/`+root.ID.String()+`#cost">the root</a> is spent`)

	if _, err := e.leases.SetBudget(ctx, e.project.ID, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](1000)}, "ann"); err != nil {
		t.Fatal(err)
	}
	r = b.get("/p/acme/items/" + waiting.ID.String())
	if strings.Contains(r.body, `class="budget-spent"`) {
		t.Fatal("the page still says the budget is spent after it was raised")
	}
}

func ptr[T any](v T) *T { return &v }

// TestBudgetFormKeepsWhatWasTyped: a budget form refused for bad input
// comes back, on the page it was sent from, with what was typed in its
// fields (once: the next view shows the stored limits again), beside
// the message that says why. The fields came back empty, so one typo lost
// every limit typed.
func TestBudgetFormKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	root := e.mustItem("typed root")
	b := e.signIn(e.human)
	itemPath := "/p/acme/items/" + root.ID.String()
	form := url.Values{"max_tokens": {"2,000,000"}, "max_cost_usd": {"-3"}, "max_wall": {"4h"}, "max_depth": {"7"}}

	r := b.post(itemPath+"/budget", form)
	wantStatus(t, r, http.StatusSeeOther)
	r = b.get(itemPath)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Budget not changed", `name="max_tokens" inputmode="numeric" value="2,000,000"`,
		`name="max_cost_usd" inputmode="decimal" value="-3"`, `name="max_wall" value="4h"`, `name="max_depth" inputmode="numeric" value="7"`)
	r = b.get(itemPath)
	wantBody(t, r, `name="max_tokens" inputmode="numeric" value=""`, `name="max_depth" inputmode="numeric" value=""`)

	// Sent from the inbox (a spent budget's request) it goes back there,
	// and what was typed waits for that item's form only.
	r = b.post(itemPath+"/budget", url.Values{"max_tokens": {"lots"}, "max_depth": {"3"}, "back": {"/p/acme/inbox"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/p/acme/inbox" {
		t.Fatalf("Location = %q, want the inbox", loc)
	}
	// Another item's form is not filled with it.
	other := e.mustItem("other root")
	r = b.get("/p/acme/items/" + other.ID.String())
	wantBody(t, r, `name="max_tokens" inputmode="numeric" value=""`)
	r = b.get(itemPath)
	wantBody(t, r, `name="max_tokens" inputmode="numeric" value="lots"`, `name="max_depth" inputmode="numeric" value="3"`)
}
