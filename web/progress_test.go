package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestLeaseProgress: what a worker reports on its heartbeats shows on the
// item page (the live lease and each lease's last report) and in the
// history, and the board and the list say which worker holds a leased item.
func TestLeaseProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	held := e.mustItem("held item")
	e.mustItem("waiting item")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-progress"})
	if err != nil || c.Item.ID != held.ID {
		t.Fatalf("claim: %+v, %v", c.Item, err)
	}
	f := lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}
	if _, err := e.leases.Heartbeat(ctx, e.project.ID, f, lease.Heartbeat{Progress: json.RawMessage(`{"message": "tests <pass>", "done": 3}`)}); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)

	t.Run("ItemPage", func(t *testing.T) {
		r := b.get("/p/acme/items/" + held.ID.String())
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `<b>w-progress</b> holds it (epoch 1)`, "last heard",
			`<span class="muted">Progress:</span> tests &lt;pass&gt; {&#34;done&#34;:3}`,
			`<th>Last progress</th>`)
	})
	t.Run("History", func(t *testing.T) {
		r := b.get("/p/acme/leases")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `<td class="progress"><span title="tests &lt;pass&gt; {&#34;done&#34;:3}">tests &lt;pass&gt; {&#34;done&#34;:3}</span></td>`)
	})
	t.Run("Workers", func(t *testing.T) {
		// What each live lease last reported, under its item.
		r := b.get("/p/acme/workers")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `<div class="small muted progress-line" title="tests &lt;pass&gt; {&#34;done&#34;:3}">tests &lt;pass&gt; {&#34;done&#34;:3}</div>`)
	})
	t.Run("Board", func(t *testing.T) {
		r := b.get("/p/acme/items")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `data-holder="w-progress">held by <b>w-progress</b>`)
		if n := strings.Count(r.body, "data-holder="); n != 1 {
			t.Errorf("%d holders on the board, want 1 (only the leased item)", n)
		}
		r = b.get("/p/acme/items?view=list")
		wantBody(t, r, `data-holder="w-progress">by <b>w-progress</b>`)
	})
	t.Run("Ended", func(t *testing.T) {
		if _, err := e.leases.Release(ctx, e.project.ID, f, "done for now"); err != nil {
			t.Fatal(err)
		}
		r := b.get("/p/acme/items/" + held.ID.String())
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(r.body, "holds it") {
			t.Error("an ended lease is shown as holding the item")
		}
		// The last report stays in the lease's row.
		wantBody(t, r, `tests &lt;pass&gt; {&#34;done&#34;:3}</span></td>`)
		if r := b.get("/p/acme/items"); strings.Contains(r.body, "data-holder=") {
			t.Error("the board names a holder after the release")
		}
	})
}

// TestBoardKeptFor: after a person answers a worker's question, the item
// is ready but kept for that worker a while: the board and the list say
// for whom, and a ready item kept for nobody says nothing. The item page
// names the worker that asked.
func TestBoardKeptFor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	asked := e.mustItem("asked about")
	c, req := e.claimAndAsk("w-asker", attention.NewRequest{Question: "Which one?", Blocking: true, RequestedBy: "test"})
	if c.Item.ID != asked.ID {
		t.Fatalf("claimed %q, want %q", c.Item.Title, asked.Title)
	}
	e.mustItem("free item")
	if _, err := e.att.Resolve(ctx, e.project.ID, req.ID, "this one", "test"); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	// The item page names the worker that asked, beside its token.
	r := b.get("/p/acme/items/" + asked.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "worker <b>w-asker</b> (test) asked")
	// So does the inbox while a question is open (on the free item).
	if c2, _ := e.claimAndAsk("w-open", attention.NewRequest{Question: "Still open?", Blocking: true, RequestedBy: "test"}); c2.Item.Title != "free item" {
		t.Fatalf("claimed %q, want the free item", c2.Item.Title)
	}
	r = b.get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "asked by worker <b>w-open</b> (test)")
	for _, view := range []string{"", "?view=list"} {
		r := b.get("/p/acme/items" + view)
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `data-kept-for="w-asker"`, "kept for <b>w-asker</b>")
		if n := strings.Count(r.body, "data-kept-for="); n != 1 {
			t.Errorf("items%s: %d items kept for a worker, want 1", view, n)
		}
	}
}

// TestAskerVia: the principal beside the worker that asked, unless it only
// repeats the worker's name.
func TestAskerVia(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("asked by a named token")
	e.claimAndAsk("gemini-3", attention.NewRequest{Question: "Which?", Blocking: true, RequestedBy: "token:gemini-3"})
	b := e.signIn(e.human)
	r := b.get("/p/acme/inbox")
	wantBody(t, r, "asked by worker <b>gemini-3</b></span>")
	r = b.get("/p/acme/items/" + it.ID.String())
	wantBody(t, r, "worker <b>gemini-3</b> asked")
}

// TestBoardRetryAfter: a failed item waits out its backoff as blocked; its
// tile on the board says when it is retried.
func TestBoardRetryAfter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.mustItem("fails once")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-fail"})
	if err != nil || c.Item.ID != it.ID {
		t.Fatalf("claim: %+v, %v", c.Item, err)
	}
	e.mustItem("never failed")
	if _, err := e.leases.Fail(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, lease.Failure{Message: "boom"}); err != nil {
		t.Fatal(err)
	}
	// The tile's instant is the stored one.
	got, err := e.graph.Item(ctx, e.project.ID, it.ID)
	if err != nil || got.BlockedBy.RetryAfter == nil {
		t.Fatalf("after the failure: %+v, %v; want a retry instant", got.BlockedBy, err)
	}
	r := e.signIn(e.human).get("/p/acme/items")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `data-retry-after="`+got.BlockedBy.RetryAfter.UTC().Format(time.RFC3339Nano)+`"`, ">retried ")
	if n := strings.Count(r.body, "data-retry-after="); n != 1 {
		t.Errorf("%d tiles say when they are retried, want 1", n)
	}
}
