package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/web"
)

// TestAnswerToClosedRequest: an answer, dismissal or decision sent to a
// request someone else closed meanwhile is refused (409, nothing
// changed) with a page that says who closed it, how, and with what
// answer, linking to the item and back to the inbox. It said only
// "attention request <id> is already resolved".
func TestAnswerToClosedRequest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "Pick a colour", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.att.Open(ctx, e.project.ID, it.ID, attention.NewRequest{
		Question: "Which colour?", Source: attention.SourcePerson, RequestedBy: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := e.signIn(e.admin)
	wantStatus(t, admin.post("/p/acme/attention/"+q.ID.String()+"/resolve", url.Values{"answer": {"Blue, says the admin"}}), http.StatusSeeOther)

	b := e.signIn(e.human)
	for _, tc := range []struct {
		name, path string
		form       url.Values
	}{
		{"Answer", "/resolve", url.Values{"answer": {"Green"}}},
		{"Dismiss", "/dismiss", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.post("/p/acme/attention/"+q.ID.String()+tc.path, tc.form)
			wantStatus(t, r, http.StatusConflict)
			wantBody(t, r, "Not sent: the request is closed", "already answered by token:t-admin",
				"with: “Blue, says the admin”", `href="/p/acme/items/`+it.ID.String()+`"`, `href="/p/acme/inbox">Back to the inbox`)
			got, err := e.att.Get(ctx, e.project.ID, q.ID)
			if err != nil || got.Answer == nil || *got.Answer != "Blue, says the admin" {
				t.Fatalf("the request after a refused %s: %+v, %v", tc.name, got, err)
			}
		})
	}
}

// TestCancelFinishedItem: cancelling an item that finished meanwhile (the
// form of a page opened before) is refused (409, nothing changed) with a
// page that names the item and its state and links to it. It said only
// "item <id> is already done".
func TestCancelFinishedItem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.mustItem("Finished already")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Complete(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, nil, nil); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	r := b.post("/p/acme/items/"+it.ID.String()+"/cancel", nil)
	wantStatus(t, r, http.StatusConflict)
	wantBody(t, r, "Not cancelled", "“Finished already” was not cancelled: it is already done", `href="/p/acme/items/`+it.ID.String()+`">The item as it is now`)
	if got, err := e.graph.Item(ctx, e.project.ID, it.ID); err != nil || got.State != graph.StateDone {
		t.Fatalf("the item after a refused cancel: %v, %v", got.State, err)
	}
}

// TestClosedRequestSaysWhenInItsWords: the page refusing an answer to a
// request closed meanwhile says when it was closed as the UI's times read,
// and a replica clock behind the database's (which stamped the closing)
// reads as just now: it said "-59m 59s ago".
func TestClosedRequestSaysWhenInItsWords(t *testing.T) {
	t.Parallel()
	e := setup(t, func(d *web.Deps) { d.Local = func() time.Time { return time.Now().Add(-time.Hour) } })
	ctx := context.Background()
	hold, err := e.att.Hold(ctx, e.project.ID, e.mustItem("held").ID, "", "token:t-admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.att.Dismiss(ctx, e.project.ID, hold.ID, "token:t-admin", ""); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	r := b.post("/p/acme/attention/"+hold.ID.String()+"/resolve", url.Values{"answer": {"Green"}})
	wantStatus(t, r, http.StatusConflict)
	wantBody(t, r, "already dismissed by token:t-admin, just now")
}
