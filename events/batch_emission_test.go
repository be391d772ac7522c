package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestBatchReportsEachItemOnce claims and completes several items with one
// batch claim and one batch completion in one transaction: the item
// triggers see several items per statement, and the completion's
// statement rewrites the claim's item events (the transaction reports each
// item's net change once, ready -> done), while the dependent freed by the
// completion gets an event of its own. Rolled back, nothing is left.
//
// A database of its own: the setup commits before the change (see
// TestEveryChangeWritesItsEvent).
func TestBatchReportsEachItemOnce(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	p := project(t, pool)
	var t0 time.Time
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	setup := on(t, pool, clk, p)
	const n = 5
	ids := map[uuid.UUID]bool{}
	var first uuid.UUID
	for i := 0; i < n; i++ {
		it := setup.item("batch")
		ids[it.ID] = true
		if i == 0 {
			first = it.ID
		}
	}
	dependent := setup.item("after", first)
	mark := lastSeq(t, pool, p)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	w := on(t, tx, clk, p)
	claims, err := w.leases.ClaimBatch(w.ctx, p, lease.ClaimRequest{Worker: "w1", Principal: "token:agent"}, 10)
	w.must(err)
	if len(claims) != n {
		t.Fatalf("the batch claimed %d items, want %d", len(claims), n)
	}
	entries := make([]lease.CompletionEntry, len(claims))
	for i, c := range claims {
		entries[i] = lease.CompletionEntry{Fence: fenceOf(c.Lease), Result: json.RawMessage(`{"ok":true}`)}
	}
	answers, err := w.leases.CompleteBatch(w.ctx, p, nil, entries)
	w.must(err)
	for i, a := range answers {
		if a.Err != nil {
			t.Fatalf("entry %d: %v", i, a.Err)
		}
	}

	got := eventsAfter(t, tx, p, mark)
	count := map[string]int{}
	changes := map[uuid.UUID]int{}
	for _, e := range got {
		count[e.Type]++
		if e.Actor != "worker:w1" {
			t.Errorf("%d %s is by %s, want worker:w1", e.Seq, e.Type, e.Actor)
		}
		if e.Type != events.ItemStateChanged {
			continue
		}
		if e.ItemID == nil {
			t.Fatalf("%d %s names no item", e.Seq, e.Type)
		}
		changes[*e.ItemID]++
		var pl map[string]any
		if err := json.Unmarshal(e.Payload, &pl); err != nil {
			t.Fatal(err)
		}
		want := [2]string{"ready", "done"}
		if *e.ItemID == dependent.ID {
			want = [2]string{"blocked", "ready"}
		} else if !ids[*e.ItemID] {
			t.Errorf("%d %s of an item the batch did not take", e.Seq, e.Type)
		}
		if pl["from"] != want[0] || pl["to"] != want[1] {
			t.Errorf("%d %s of %s: %v -> %v, want %s -> %s", e.Seq, e.Type, *e.ItemID, pl["from"], pl["to"], want[0], want[1])
		}
	}
	if count[events.LeaseGranted] != n || count[events.LeaseEnded] != n || count[events.ItemStateChanged] != n+1 || len(got) != 3*n+1 {
		t.Fatalf("the batch wrote %v, want %d lease.granted, %d lease.ended, %d item.state_changed:\n%s",
			count, n, n, n+1, describe(got))
	}
	for id, k := range changes {
		if k != 1 {
			t.Errorf("item %s has %d state changes, want 1", id, k)
		}
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if left := eventsAfter(t, pool, p, mark); len(left) != 0 {
		t.Fatalf("the rolled-back batch left events:\n%s", describe(left))
	}
}
