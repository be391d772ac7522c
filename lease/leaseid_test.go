package lease_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestLeaseIDsAreTimeOrdered: every path that grants a lease gives it a
// UUID version 7 (migration 00166, newLeaseID), whose leading 48 bits are
// milliseconds, so that a grant's insert lands on the right-hand page of
// the lease id indexes: the one-statement claim, the transactional claim
// (a lease past its expiry and not yet ended sends a claim there), the
// batch claim (whose statement makes its ids, wg_uuid_v7) and the batch's
// claims of items with write scopes (made one at a time, fillScoped). Ids
// granted later never sort before ids granted earlier by more than the
// millisecond they share (random bits follow the time).
func TestLeaseIDsAreTimeOrdered(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	var ids []uuid.UUID
	path := map[uuid.UUID]string{}
	add := func(name string, cs ...lease.Claim) {
		t.Helper()
		if len(cs) == 0 {
			t.Fatalf("%s granted nothing", name)
		}
		for _, c := range cs {
			ids = append(ids, c.Lease.ID)
			path[c.Lease.ID] = name
		}
		// Each path's ids sort after the last path's by their time.
		time.Sleep(2 * time.Millisecond)
	}

	f.item(t, graph.NewItem{Labels: []string{"one"}})
	one, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"one"}})
	if err != nil {
		t.Fatal(err)
	}
	add("one statement", one)

	f.items(t, 3)
	add("batch", f.claimBatch(t, "w", 3)...)

	f.item(t, graph.NewItem{Labels: []string{"scoped"}, Touches: []string{"r:a"}})
	f.item(t, graph.NewItem{Labels: []string{"scoped"}, Touches: []string{"r:b"}})
	scoped, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"scoped"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	add("batch of scoped items", scoped...)

	// A lease past its expiry, not ended: the guard that sends a claim to
	// its transactional path.
	f.item(t, graph.NewItem{Labels: []string{"short"}})
	short, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "s", Labels: []string{"short"}, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	add("one statement", short)
	f.clock.Set(short.Lease.ExpiresAt.Add(time.Second))
	f.item(t, graph.NewItem{Labels: []string{"tx"}})
	tx, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"tx"}})
	if err != nil {
		t.Fatal(err)
	}
	add("transaction", tx)

	for i, id := range ids {
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Errorf("%s: lease id %s is version %d, variant %s; want version 7 of RFC 9562", path[id], id, id.Version(), id.Variant())
		}
		if i > 0 && bytes.Compare(id[:6], ids[i-1][:6]) < 0 {
			t.Errorf("%s: lease id %s sorts before %s, granted earlier (%s)", path[id], id, ids[i-1], path[ids[i-1]])
		}
	}
}
