package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestInboxOverdueFirst: an overdue question is marked and shown before
// older ones that are not.
func TestInboxOverdueFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ask := func(title, question string, due time.Duration) {
		t.Helper()
		e.mustItem(title)
		c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
			attention.NewRequest{Question: question, Blocking: true, DueIn: due}); err != nil {
			t.Fatal(err)
		}
	}
	ask("Old", "Older question?", 0)
	ask("Late", "Late question?", time.Minute)
	later := attention.NewService(e.pool, clock.NewStub(time.Now().Add(time.Hour)), attention.Config{})
	if n, err := attention.NewDeadlineSweeper(later, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("deadline sweep: %d, %v", n, err)
	}
	r := e.signIn(e.human).get("/p/acme/inbox")
	wantBody(t, r, "Older question?", "Late question?", `class="label overdue"`)
	body := r.body
	if strings.Index(body, "Late question?") > strings.Index(body, "Older question?") {
		t.Fatal("the overdue question is not shown first")
	}
}

// TestInboxOverdueBeyondFirstPage: an overdue question newer than the 50
// oldest open requests (the inbox shows 50) is still shown, first: it
// used to be left out with the newer ones until older ones were answered.
func TestInboxOverdueBeyondFirstPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for i := range 50 {
		it := e.mustItem("held " + strconv.Itoa(i))
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, "wait "+strconv.Itoa(i), "token:t-human"); err != nil {
			t.Fatal(err)
		}
	}
	e.mustItem("Late")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		attention.NewRequest{Question: "Late question?", Blocking: true, DueIn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	later := attention.NewService(e.pool, clock.NewStub(time.Now().Add(time.Hour)), attention.Config{})
	if n, err := attention.NewDeadlineSweeper(later, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("deadline sweep: %d, %v", n, err)
	}
	r := e.signIn(e.human).get("/p/acme/inbox")
	wantBody(t, r, "Late question?", `class="label overdue"`, "wait 0", "50 of 51 open requests on this page, 1 overdue", `rel="next" href="/p/acme/inbox?after=`)
	if i, j := strings.Index(r.body, "Late question?"), strings.Index(r.body, "wait 0"); i < 0 || j < 0 || i > j {
		t.Fatal("the overdue question is not shown first")
	}
	if n := strings.Count(r.body, `<article class="request`); n != 50 {
		t.Fatalf("the inbox shows %d requests, want 50", n)
	}
	if strings.Contains(r.body, "wait 49<") {
		t.Fatal("the inbox shows 51 requests")
	}
}
