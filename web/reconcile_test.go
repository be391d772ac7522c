package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	wgpage "github.com/workgraph-dev/workgraph/page"
)

// TestInboxUncertainOutcome: an expired lease of a reconcile item shows in
// the inbox with the old attempt's late report and the three decisions; a
// decision "done" with a result finishes the item, recorded as the person's.
func TestInboxUncertainOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Deploy v2", CreatedBy: "test", OnExpiry: graph.OnExpiryReconcile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-7"})
	if err != nil {
		t.Fatal(err)
	}
	// The lease expires: a sweeper whose (stub) clock is past its expiry.
	later := lease.NewService(e.pool, clock.NewStub(c.Lease.ExpiresAt.Add(time.Second)), lease.Config{})
	if n, err := later.ReapExpired(ctx, e.project.ID, 0); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v", n, err)
	}
	f := lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}
	if _, err := e.leases.Complete(ctx, e.project.ID, f, json.RawMessage(`{"late":"report"}`), nil); err == nil {
		t.Fatal("the late completion was applied")
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/inbox")
	wantBody(t, r, "Deploy v2", "uncertain outcome", "agent-7", "Late reports", "late", `value="retry"`, `value="done"`, `value="cancel"`)

	reqsPage, err := e.att.ForItem(ctx, e.project.ID, it.ID, "", 0)
	reqs := reqsPage.Requests
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests = %+v, %v", reqs, err)
	}
	r = b.post("/p/acme/attention/"+reqs[0].ID.String()+"/resolve", url.Values{
		"decision": {"done"}, "result": {`{"deployed": true}`}, "note": {"checked the dashboard"},
	})
	wantStatus(t, r, http.StatusSeeOther)
	got, err := e.att.Get(ctx, e.project.ID, reqs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Decision == nil || *got.Decision != attention.DecisionDone || got.ResolvedBy == nil || *got.ResolvedBy != "token:t-human" {
		t.Fatalf("stored request = %+v", got)
	}
	item, err := e.graph.Item(ctx, e.project.ID, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if item.State != graph.StateDone || string(item.Result) != `{"deployed": true}` {
		t.Fatalf("item = %s %s, want done with the person's result", item.State, item.Result)
	}
	r = b.get("/p/acme/items/" + it.ID.String())
	wantBody(t, r, "with the decision <b>done</b>")
}

// TestInboxDoneDecisionBlocked: a decision "done" on an item that gained an
// open child while it waited for the decision is refused: the inbox comes
// back saying what the item waits for (naming the child), the request is
// still open and the item still open, and its dependent stays blocked.
func TestInboxDoneDecisionBlocked(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Deploy v3", CreatedBy: "test", OnExpiry: graph.OnExpiryReconcile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-7"})
	if err != nil || c.Item.ID != it.ID {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	later := lease.NewService(e.pool, clock.NewStub(c.Lease.ExpiresAt.Add(time.Second)), lease.Config{})
	if n, err := later.ReapExpired(ctx, e.project.ID, 0); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v", n, err)
	}
	child, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Roll back the canary", ParentID: &it.ID, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dependent := e.mustItem("Announce v3", it.ID)
	reqsPage, err := e.att.ForItem(ctx, e.project.ID, it.ID, "", 0)
	reqs := reqsPage.Requests
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests = %+v, %v", reqs, err)
	}
	b := e.signIn(e.human)
	r := b.post("/p/acme/attention/"+reqs[0].ID.String()+"/resolve", url.Values{
		"decision": {"done"}, "result": {`{"deployed": true}`},
	})
	wantStatus(t, r, http.StatusSeeOther)
	r = b.get(r.Header.Get("Location"))
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "cannot be done", "Roll back the canary", child.ID.String())
	got, err := e.att.Get(ctx, e.project.ID, reqs[0].ID)
	if err != nil || got.State != attention.StateOpen {
		t.Fatalf("request = %+v, %v; want still open", got, err)
	}
	for id, want := range map[uuid.UUID]graph.State{it.ID: graph.StateAttention, dependent.ID: graph.StateBlocked} {
		if item, err := e.graph.Item(ctx, e.project.ID, id); err != nil || item.State != want {
			t.Errorf("item %s = %s (%v), want %s", id, item.State, err, want)
		}
	}
}

// TestInboxLateReportsPaged: an uncertain outcome whose expired attempt
// sent more late reports than a page holds (30 refused completions of
// 400 KB results: 10 MB) shows the first page of them, each payload cut,
// and says where the rest are, within the page's byte budget.
func TestInboxLateReportsPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if _, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Deploy v3", CreatedBy: "test", OnExpiry: graph.OnExpiryReconcile}); err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-8"})
	if err != nil {
		t.Fatal(err)
	}
	later := lease.NewService(e.pool, clock.NewStub(c.Lease.ExpiresAt.Add(time.Second)), lease.Config{})
	if n, err := later.ReapExpired(ctx, e.project.ID, 0); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v", n, err)
	}
	f := lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}
	for i := range 30 {
		result := json.RawMessage(fmt.Sprintf(`{"call":%d,"pad":%q}`, i+1, strings.Repeat("p", 400_000)))
		if _, err := e.leases.Complete(ctx, e.project.ID, f, result, nil); err == nil {
			t.Fatal("the late completion was applied")
		}
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Deploy v3", "Late reports", "More late reports follow these", "GET /v1/leases/"+c.Lease.ID.String()+"?cursor=")
	if len(r.body) > wgpage.MaxBytes {
		t.Errorf("the inbox is %d bytes of HTML, over the budget of %d", len(r.body), wgpage.MaxBytes)
	}
}

// TestInboxDecisionBadResult: a decision "done" whose result is not JSON
// changes nothing and comes back to the inbox saying what to correct,
// with the request still there to decide (the typed result and note stay
// in the browser's drafts). It was a bare error page whose only link led
// to the project's home.
func TestInboxDecisionBadResult(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Deploy v4", CreatedBy: "test", OnExpiry: graph.OnExpiryReconcile})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-9"})
	if err != nil {
		t.Fatal(err)
	}
	later := lease.NewService(e.pool, clock.NewStub(c.Lease.ExpiresAt.Add(time.Second)), lease.Config{})
	if n, err := later.ReapExpired(ctx, e.project.ID, 0); err != nil || n != 1 {
		t.Fatalf("reap = %d, %v", n, err)
	}
	reqs, err := e.att.ForItem(ctx, e.project.ID, it.ID, "", 0)
	if err != nil || len(reqs.Requests) != 1 {
		t.Fatalf("requests = %+v, %v", reqs.Requests, err)
	}
	q := reqs.Requests[0]
	b := e.signIn(e.human)
	r := b.post("/p/acme/attention/"+q.ID.String()+"/resolve", url.Values{"decision": {"done"}, "result": {`{"deployed": tru`}, "note": {"checked"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/p/acme/inbox" {
		t.Fatalf("Location = %q, want the inbox", loc)
	}
	r = b.get("/p/acme/inbox")
	wantBody(t, r, "Not decided: result", `id="req-`+q.ID.String()+`"`)
	if got, err := e.att.Get(ctx, e.project.ID, q.ID); err != nil || got.State != attention.StateOpen {
		t.Fatalf("the request after a refused decision: %v, %v", got.State, err)
	}
}
