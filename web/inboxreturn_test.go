package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestBudgetFormComesBackToItsInboxPage: a budget raised from the inbox's
// second page (a budget_exhausted request behind 50 older ones) returns
// to that page, as an answer does, not to the first; so does a refused
// raise, and an answer refused for being blank. Only a path of this site
// is followed, and only a cursor that reads as one is carried: a form
// naming another site, or a cursor that is not one, returns to the item
// or the first page.
func TestBudgetFormComesBackToItsInboxPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for i := range 50 {
		it := e.mustItem("held " + strconv.Itoa(i))
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, "wait "+strconv.Itoa(i), "token:t-human"); err != nil {
			t.Fatal(err)
		}
	}
	root := e.mustItem("budgeted root")
	if _, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "child", ParentID: &root.ID, CreatedBy: "t"}); err != nil {
		t.Fatal(err)
	}
	max := int64(1000)
	if _, err := e.leases.SetBudget(ctx, e.project.ID, root.ID, lease.BudgetLimits{MaxTokens: &max}, "test"); err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-spender"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Heartbeat(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		lease.Heartbeat{Usage: lease.Usage{TokensIn: 1500}}); err != nil {
		t.Fatal(err)
	}
	if bud, err := e.leases.Budget(ctx, e.project.ID, root.ID); err != nil || !bud.Spent || bud.RequestID == nil {
		t.Fatalf("budget after spending = %+v, %v; want spent with a request", bud, err)
	}

	b := e.signIn(e.human)
	first := b.get("/p/acme/inbox")
	m := regexp.MustCompile(`rel="next" href="/p/acme/inbox\?after=([^"]+)"`).FindStringSubmatch(first.body)
	if m == nil {
		t.Fatal("the first page has no link to the next")
	}
	cursor, err := url.QueryUnescape(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	budgetPath := "/p/acme/items/" + root.ID.String() + "/budget"
	second := b.get("/p/acme/inbox?after=" + url.QueryEscape(cursor))
	wantBody(t, second, "Raise the budget", `action="`+budgetPath+`"`, `name="after" value="`+htmlText(t, cursor)+`"`)
	secondPage := "/p/acme/inbox?after=" + url.QueryEscape(cursor)

	location := func(form url.Values) string {
		t.Helper()
		r := b.post(budgetPath, form)
		wantStatus(t, r, http.StatusSeeOther)
		return r.Header.Get("Location")
	}
	t.Run("RefusedComesBack", func(t *testing.T) {
		if loc := location(url.Values{"max_tokens": {"lots"}, "back": {"/p/acme/inbox"}, "after": {cursor}}); loc != secondPage {
			t.Fatalf("a refused raise went to %q, want the second page %q", loc, secondPage)
		}
	})
	t.Run("ErrOtherSite", func(t *testing.T) {
		for _, back := range []string{"https://evil.example/p/acme/inbox", "//evil.example/p/acme/inbox", "/p/acme/inbox?x=1"} {
			if loc := location(url.Values{"max_tokens": {"lots"}, "back": {back}, "after": {cursor}}); loc != "/p/acme/items/"+root.ID.String() {
				t.Errorf("back %q: went to %q, want the item page", back, loc)
			}
		}
	})
	t.Run("ErrNotACursor", func(t *testing.T) {
		if loc := location(url.Values{"max_tokens": {"lots"}, "back": {"/p/acme/inbox"}, "after": {"not-a-cursor"}}); loc != "/p/acme/inbox" {
			t.Fatalf("a bad cursor: went to %q, want the first page", loc)
		}
	})
	t.Run("BlankAnswerComesBack", func(t *testing.T) {
		held := regexp.MustCompile(`action="(/p/acme/attention/[0-9a-f-]+)/dismiss"`).FindStringSubmatch(first.body)
		if held == nil {
			t.Fatal("no request to answer on the first page")
		}
		r := b.post(held[1]+"/resolve", url.Values{"answer": {"  "}, "back": {"/p/acme/inbox"}, "after": {cursor}})
		wantStatus(t, r, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != secondPage {
			t.Fatalf("a blank answer went to %q, want the page it came from %q", loc, secondPage)
		}
	})
	t.Run("AllProjectsInbox", func(t *testing.T) {
		loc := location(url.Values{"max_tokens": {"lots"}, "back": {"/inbox"}, "filter": {"acme"}, "after": {cursor}})
		if want := "/inbox?" + (url.Values{"after": {cursor}, "project": {"acme"}}).Encode(); loc != want {
			t.Fatalf("a refused raise from the all-projects inbox went to %q, want %q", loc, want)
		}
	})
	t.Run("OK", func(t *testing.T) {
		if loc := location(url.Values{"max_tokens": {"5000"}, "back": {"/p/acme/inbox"}, "after": {cursor}}); loc != secondPage {
			t.Fatalf("the raise went to %q, want the second page %q", loc, secondPage)
		}
		wantBody(t, b.get(secondPage), "Budget raised: its request is closed")
	})
}
