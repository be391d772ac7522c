package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestItemLeasesReadsEveryPage: ItemLeases returns every lease of the
// item, oldest first, however many pages of the server's list they fill
// (a page holds 50 by default): the work supervisor looks for the lease it
// ran among them, which on an item claimed often is the newest one.
func TestItemLeasesReadsEveryPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, agent, _ := agentOn(t, dbtest.URL(t))
	const n = 53
	var granted []string
	for range n {
		cl, err := agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Release(ctx, cl.Lease.ID, client.ReleaseRequest{Epoch: cl.Lease.Epoch}); err != nil {
			t.Fatal(err)
		}
		granted = append(granted, cl.Lease.ID)
	}
	page, err := agent.ListItems(ctx, "p", client.ListItemsOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("items: %+v, %v", page, err)
	}
	leases, err := agent.ItemLeases(ctx, "p", page.Items[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != n {
		t.Fatalf("%d leases, want all %d", len(leases), n)
	}
	for i, l := range leases {
		if l.ID != granted[i] {
			t.Fatalf("lease %d is %s, want %s (oldest first)", i, l.ID, granted[i])
		}
	}
}

// TestItemLeasesFollowsCursors: ItemLeases asks for the largest pages and
// follows next_cursor until a page has none.
func TestItemLeasesFollowsCursors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/projects/p/items/i/leases" || r.URL.Query().Get("limit") != "500" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch c := r.URL.Query().Get("cursor"); c {
		case "":
			fmt.Fprint(w, `{"leases": [{"id": "l1"}, {"id": "l2"}], "next_cursor": "c2"}`)
		case "c2":
			fmt.Fprint(w, `{"leases": [{"id": "l3"}], "next_cursor": "c3"}`)
		case "c3":
			fmt.Fprint(w, `{"leases": [], "next_cursor": null}`)
		default:
			http.Error(w, "unknown cursor "+c, http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "token")
	if err != nil {
		t.Fatal(err)
	}
	leases, err := c.ItemLeases(context.Background(), "p", "i")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range leases {
		ids = append(ids, l.ID)
	}
	if fmt.Sprint(ids) != "[l1 l2 l3]" {
		t.Fatalf("leases %v, want [l1 l2 l3]", ids)
	}
}

// TestClaimBatchOfNone: ClaimBatch asks for a batch whatever max is, so
// a max outside 1..MaxBatch is the server's refusal (invalid_argument,
// nothing granted), never a single lease the batch answer cannot hold.
func TestClaimBatchOfNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, agent, _ := agentOn(t, dbtest.URL(t))
	for _, max := range []int{0, -1, client.MaxBatch + 1} {
		cs, err := agent.ClaimBatch(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60}, max)
		if !errors.Is(err, client.ErrInvalidArgument) || len(cs) != 0 {
			t.Fatalf("ClaimBatch(max %d) = %d claims, %v; want invalid_argument", max, len(cs), err)
		}
	}
	page, err := agent.ListItems(ctx, "p", client.ListItemsOptions{State: client.StateReady})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ready items after the refused batches: %+v, %v; want the one item, never claimed", page, err)
	}
}

// TestGetLeasePage: a lease's refused reports come a page at a time, and
// GetLeasePage follows ObservationsNextCursor to the rest, each once.
func TestGetLeasePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, agent, _ := agentOn(t, dbtest.URL(t))
	cl, err := agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Release(ctx, cl.Lease.ID, client.ReleaseRequest{Epoch: cl.Lease.Epoch}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := agent.Heartbeat(ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch}); err == nil {
			t.Fatal("a heartbeat of a released lease was accepted")
		}
	}
	first, err := agent.GetLease(ctx, cl.Lease.ID)
	if err != nil || len(first.Observations) != 3 || first.ObservationsNextCursor != nil {
		t.Fatalf("the first page: %+v, %v; want the 3 reports and no next cursor", first, err)
	}
	seen, cursor := 0, ""
	for range 4 {
		p, err := agent.GetLeasePage(ctx, cl.Lease.ID, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Observations) != 1 {
			t.Fatalf("a page of limit 1 holds %d reports", len(p.Observations))
		}
		seen += len(p.Observations)
		if p.ObservationsNextCursor == nil {
			break
		}
		cursor = *p.ObservationsNextCursor
	}
	if seen != 3 {
		t.Errorf("pages of 1 gave %d reports, want 3", seen)
	}
}
