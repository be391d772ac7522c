package lease_test

import (
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestBatchClaimGrantsInClaimOrder: a batch claim grants the items a
// sequence of single claims would, in their order (priority, then age),
// whether or not they carry write scopes: a higher-priority item with
// touches is not passed over for a lower-priority one without, and an item
// whose scope a live lease holds is skipped as a single claim skips it. A
// database of its own: the batch fills with items with touches one
// statement each, each a transaction of its own, only on a pool.
func TestBatchClaimGrantsInClaimOrder(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	f.item(t, graph.NewItem{Title: "holder", Priority: 10, Touches: []string{"repo:b/**"}})
	if c := f.claim(t, "holder"); c.Item.Title != "holder" {
		t.Fatalf("claimed %q, want the holder", c.Item.Title)
	}
	held := f.item(t, graph.NewItem{Title: "scope held", Priority: 8, Touches: []string{"repo:b/x"}})
	scoped := f.item(t, graph.NewItem{Title: "scoped", Priority: 9, Touches: []string{"repo:a/**"}})
	mid := f.item(t, graph.NewItem{Title: "mid", Priority: 5})
	low := f.item(t, graph.NewItem{Title: "low", Priority: 1})
	tie := f.item(t, graph.NewItem{Title: "scoped tie", Priority: 1, Touches: []string{"repo:c/**"}})

	titles := func(cs []lease.Claim) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Item.Title
		}
		return out
	}
	check := func(t *testing.T, max int, want ...graph.Item) {
		t.Helper()
		got, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, max)
		if err != nil {
			t.Fatal(err)
		}
		ok := len(got) == len(want)
		var names []string
		for i, w := range want {
			names = append(names, w.Title)
			ok = ok && got[i].Item.ID == w.ID
		}
		if !ok {
			t.Fatalf("a batch of %d granted %q, want %q (the order of single claims)", max, titles(got), names)
		}
	}
	check(t, 2, scoped, mid)
	// low and "scoped tie" share a priority: the older first.
	check(t, 5, low, tie)
	if st := f.getItem(t, held.ID).State; st != graph.StateReady {
		t.Errorf("the item whose scope a live lease holds is %s, want ready (skipped)", st)
	}
}
