package web_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/workgraph-dev/workgraph/lease"
)

// detailsWorkerRE is a row of the item page's details that names a worker
// by a label: the label and the worker.
var detailsWorkerRE = regexp.MustCompile(`<dt>([^<]*worker)</dt><dd>([^<]*)</dd>`)

// TestItemDetailsNameThePreviousWorker: an item released by one worker and
// claimed by another shows the first, its previous_worker, as the previous
// worker, never as the last worker while the second one holds the item.
func TestItemDetailsNameThePreviousWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("handed over")
	ctx := context.Background()
	first, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Release(ctx, e.project.ID, lease.Fence{LeaseID: first.Lease.ID, Epoch: first.Lease.Epoch}, "hand over"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "beta"}); err != nil {
		t.Fatal(err)
	}
	r := e.signIn(e.human).get("/p/acme/items/" + it.ID.String())
	wantStatus(t, r, http.StatusOK)
	rows := detailsWorkerRE.FindAllStringSubmatch(r.body, -1)
	if len(rows) != 1 || rows[0][1] != "Previous worker" || rows[0][2] != "alpha" {
		t.Fatalf("details name workers %q, want only Previous worker alpha (beta holds the item)", rows)
	}
}
