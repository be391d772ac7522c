package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/lease"
)

// The batch statements (ClaimItems, CompleteLeases) write their leases'
// events and outcome counters themselves, and the row triggers of leases
// skip their rows (migration 00169). These tests hold what that must not
// change: the same events as a single claim and completion write (type,
// instant, actor, item, lease, payload), numbered before the statement's
// item events, the same counters, and the row triggers still firing for
// every other statement of the same transaction.

// checkLeaseEvent checks that e is the event the row trigger leases_event
// writes for l: lease.granted at its grant, or lease.ended at its end (as
// completed).
func checkLeaseEvent(t *testing.T, e events.Event, l lease.Lease, typ string) {
	t.Helper()
	at := l.AcquiredAt
	if typ == events.LeaseEnded {
		if l.EndedAt == nil {
			t.Fatalf("lease %s has not ended", l.ID)
		}
		at = *l.EndedAt
	}
	if e.Type != typ || !e.At.Equal(at) || e.Actor != "worker:"+l.Worker ||
		e.ItemID == nil || *e.ItemID != l.ItemID || e.LeaseID == nil || *e.LeaseID != l.ID {
		t.Errorf("%d %s at %s by %s (item %v, lease %v), want %s at %s by worker:%s (item %s, lease %s)",
			e.Seq, e.Type, e.At, e.Actor, e.ItemID, e.LeaseID, typ, at, l.Worker, l.ItemID, l.ID)
	}
	var pl map[string]any
	if err := json.Unmarshal(e.Payload, &pl); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"lease_id": l.ID.String(), "item_id": l.ItemID.String(), "epoch": float64(l.Epoch), "worker": l.Worker}
	if typ == events.LeaseGranted {
		want["expires_at"] = l.ExpiresAt.UTC().Format(time.RFC3339Nano)
	} else {
		want["outcome"] = "completed"
	}
	if len(pl) != len(want) {
		t.Errorf("%d %s payload %s, want the keys of %v", e.Seq, e.Type, e.Payload, want)
	}
	for k, v := range want {
		if pl[k] != v {
			t.Errorf("%d %s payload %s: %s = %v, want %v", e.Seq, e.Type, e.Payload, k, pl[k], v)
		}
	}
}

// leaseEventsBeforeItemEvents returns the events of typ in log order, and
// checks that every one of them comes before the first item event.
func leaseEventsBeforeItemEvents(t *testing.T, evs []events.Event, typ string) []events.Event {
	t.Helper()
	var out []events.Event
	itemSeen := false
	for _, e := range evs {
		switch e.Type {
		case typ:
			if itemSeen {
				t.Errorf("%d %s comes after an item event of its statement:\n%s", e.Seq, e.Type, describe(evs))
			}
			out = append(out, e)
		case events.ItemStateChanged:
			itemSeen = true
		}
	}
	return out
}

func completedCount(t *testing.T, q db.DBTX, p uuid.UUID, worker string) (int64, time.Time) {
	t.Helper()
	var n int64
	var last time.Time
	err := q.QueryRow(context.Background(), `
		SELECT coalesce(sum(leases), 0)::bigint, coalesce(max(last_seen), 'epoch')
		FROM worker_outcome_counts WHERE project_id = $1 AND worker = $2 AND outcome = 'completed'`, p, worker).Scan(&n, &last)
	if err != nil {
		t.Fatal(err)
	}
	return n, last
}

// TestBatchLeaseEventsAsSingleOnes claims n items with one batch claim and
// completes them with one batch completion, each committed, then does the
// same with n single claims and completions: every lease of both has one
// lease.granted and one lease.ended event of the row trigger's form, in
// grant order for the claim, before the statement's item events, whose
// actor is the worker's; the worker's completed counter counts every
// lease, last seen at the latest end.
//
// A database of its own: each statement commits, as the log reports a
// transaction's net change.
func TestBatchLeaseEventsAsSingleOnes(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	p := project(t, pool)
	var t0 time.Time
	if err := pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	w := on(t, pool, clk, p)
	const n = 6
	for i := 0; i < n; i++ {
		w.item("batch")
	}

	mark := lastSeq(t, pool, p)
	claims, err := w.leases.ClaimBatch(w.ctx, p, lease.ClaimRequest{Worker: "wb", Principal: "token:agent"}, 10)
	w.must(err)
	if len(claims) != n {
		t.Fatalf("the batch claimed %d items, want %d", len(claims), n)
	}
	got := eventsAfter(t, pool, p, mark)
	granted := leaseEventsBeforeItemEvents(t, got, events.LeaseGranted)
	if len(granted) != n || len(got) != 2*n {
		t.Fatalf("the batch claim wrote %d lease.granted of %d events, want %d of %d:\n%s", len(granted), len(got), n, 2*n, describe(got))
	}
	for i, c := range claims {
		checkLeaseEvent(t, granted[i], c.Lease, events.LeaseGranted)
	}
	for _, e := range got {
		if e.Type == events.ItemStateChanged && e.Actor != "worker:wb" {
			t.Errorf("%d %s is by %s, want worker:wb", e.Seq, e.Type, e.Actor)
		}
	}

	clk.Advance(time.Second)
	entries := make([]lease.CompletionEntry, len(claims))
	for i, c := range claims {
		entries[i] = lease.CompletionEntry{Fence: fenceOf(c.Lease), Result: json.RawMessage(`{"ok":true}`)}
	}
	mark = lastSeq(t, pool, p)
	answers, err := w.leases.CompleteBatch(w.ctx, p, nil, entries)
	w.must(err)
	ended := map[uuid.UUID]lease.Lease{}
	var latest time.Time
	for i, a := range answers {
		if a.Err != nil {
			t.Fatalf("entry %d: %v", i, a.Err)
		}
		ended[a.Completion.Lease.ID] = a.Completion.Lease
		if end := *a.Completion.Lease.EndedAt; end.After(latest) {
			latest = end
		}
	}
	got = eventsAfter(t, pool, p, mark)
	endedEvents := leaseEventsBeforeItemEvents(t, got, events.LeaseEnded)
	if len(endedEvents) != n || len(got) != 2*n {
		t.Fatalf("the batch completion wrote %d lease.ended of %d events, want %d of %d:\n%s", len(endedEvents), len(got), n, 2*n, describe(got))
	}
	for _, e := range endedEvents {
		if e.LeaseID == nil {
			t.Fatalf("%d %s names no lease", e.Seq, e.Type)
		}
		l, ok := ended[*e.LeaseID]
		if !ok {
			t.Fatalf("%d %s of a lease the batch did not end", e.Seq, e.Type)
		}
		delete(ended, *e.LeaseID)
		checkLeaseEvent(t, e, l, events.LeaseEnded)
	}
	for _, e := range got {
		if e.Type == events.ItemStateChanged && e.Actor != "worker:wb" {
			t.Errorf("%d %s is by %s, want worker:wb", e.Seq, e.Type, e.Actor)
		}
	}
	if c, last := completedCount(t, pool, p, "wb"); c != n || !last.Equal(latest) {
		t.Errorf("worker wb counts %d completed leases, last seen %s; want %d, %s", c, last, n, latest)
	}

	// The same n through the single paths: the same forms, the same counts.
	for i := 0; i < n; i++ {
		w.item("single")
	}
	for i := 0; i < n; i++ {
		mark = lastSeq(t, pool, p)
		l := w.claim("ws")
		got = eventsAfter(t, pool, p, mark)
		if g := leaseEventsBeforeItemEvents(t, got, events.LeaseGranted); len(g) != 1 {
			t.Fatalf("a single claim wrote:\n%s", describe(got))
		} else {
			checkLeaseEvent(t, g[0], l, events.LeaseGranted)
		}
		mark = lastSeq(t, pool, p)
		c, err := w.leases.Complete(w.ctx, p, fenceOf(l), json.RawMessage(`{"ok":true}`), nil)
		w.must(err)
		got = eventsAfter(t, pool, p, mark)
		if g := leaseEventsBeforeItemEvents(t, got, events.LeaseEnded); len(g) != 1 {
			t.Fatalf("a single completion wrote:\n%s", describe(got))
		} else {
			checkLeaseEvent(t, g[0], c.Lease, events.LeaseEnded)
		}
		latest = *c.Lease.EndedAt
	}
	if c, last := completedCount(t, pool, p, "ws"); c != n || !last.Equal(latest) {
		t.Errorf("worker ws counts %d completed leases, last seen %s; want %d, %s", c, last, n, latest)
	}
}

// TestRowTriggersFireAfterABatchStatement runs, in one transaction, a
// batch claim, then a single claim and its completion, then a batch
// completion, then a single claim: each single step still writes its lease
// event and counts its outcome through the row triggers, since the batch
// statement's setting (workgraph.lease_events) ends with it. Rolled back,
// nothing is left.
func TestRowTriggersFireAfterABatchStatement(t *testing.T) {
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
	for i := 0; i < 4; i++ {
		setup.item("item")
	}
	mark := lastSeq(t, pool, p)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	w := on(t, tx, clk, p)
	setting := func(after string) {
		t.Helper()
		var v string
		if err := tx.QueryRow(ctx, `SELECT coalesce(current_setting('workgraph.lease_events', true), '')`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "" {
			t.Fatalf("after %s, workgraph.lease_events is %q, want it cleared", after, v)
		}
	}
	count := func(typ string) int {
		t.Helper()
		k := 0
		for _, e := range eventsAfter(t, tx, p, mark) {
			if e.Type == typ {
				k++
			}
		}
		return k
	}

	claims, err := w.leases.ClaimBatch(w.ctx, p, lease.ClaimRequest{Worker: "w1", Principal: "token:agent"}, 2)
	w.must(err)
	if len(claims) != 2 {
		t.Fatalf("the batch claimed %d items, want 2", len(claims))
	}
	setting("the batch claim")
	single := w.claim("w1")
	if k := count(events.LeaseGranted); k != 3 {
		t.Fatalf("after a batch of 2 and a single claim, %d lease.granted events, want 3", k)
	}
	_, err = w.leases.Complete(w.ctx, p, fenceOf(single), json.RawMessage(`{"ok":true}`), nil)
	w.must(err)
	if k := count(events.LeaseEnded); k != 1 {
		t.Fatalf("after a single completion, %d lease.ended events, want 1", k)
	}
	if c, _ := completedCount(t, tx, p, "w1"); c != 1 {
		t.Fatalf("after a single completion, w1 counts %d completed leases, want 1", c)
	}

	answers, err := w.leases.CompleteBatch(w.ctx, p, nil, []lease.CompletionEntry{
		{Fence: fenceOf(claims[0].Lease)}, {Fence: fenceOf(claims[1].Lease)}})
	w.must(err)
	for i, a := range answers {
		if a.Err != nil {
			t.Fatalf("entry %d: %v", i, a.Err)
		}
	}
	setting("the batch completion")
	last := w.claim("w1")
	if k := count(events.LeaseGranted); k != 4 {
		t.Fatalf("after a batch completion and a single claim, %d lease.granted events, want 4", k)
	}
	_, err = w.leases.Complete(w.ctx, p, fenceOf(last), json.RawMessage(`{"ok":true}`), nil)
	w.must(err)
	if k := count(events.LeaseEnded); k != 4 {
		t.Fatalf("%d lease.ended events, want 4", k)
	}
	if c, _ := completedCount(t, tx, p, "w1"); c != 4 {
		t.Fatalf("w1 counts %d completed leases, want 4", c)
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if left := eventsAfter(t, pool, p, mark); len(left) != 0 {
		t.Fatalf("the rolled-back transaction left events:\n%s", describe(left))
	}
}

// TestBatchStatementsCallNoLeaseRowTrigger counts, with track_functions,
// the calls of the row triggers' functions in a transaction: a batch claim
// of n items and its batch completion call leases_event and
// count_ended_lease not once (they called them once per lease), and a
// single claim and completion once each (the count is real).
func TestBatchStatementsCallNoLeaseRowTrigger(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	p := project(t, pool)
	clk := clock.NewStub(time.Now())
	setup := on(t, pool, clk, p)
	const n = 5
	for i := 0; i < n+1; i++ {
		setup.item("item")
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'all'`); err != nil {
		t.Skipf("track_functions cannot be set here: %v", err)
	}
	calls := func(fn string) int64 {
		t.Helper()
		var k int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions WHERE funcname = $1`, fn).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	w := on(t, tx, clk, p)
	claims, err := w.leases.ClaimBatch(w.ctx, p, lease.ClaimRequest{Worker: "w1", Principal: "token:agent"}, n)
	w.must(err)
	if len(claims) != n {
		t.Fatalf("the batch claimed %d items, want %d", len(claims), n)
	}
	entries := make([]lease.CompletionEntry, len(claims))
	for i, c := range claims {
		entries[i] = lease.CompletionEntry{Fence: fenceOf(c.Lease)}
	}
	_, err = w.leases.CompleteBatch(w.ctx, p, nil, entries)
	w.must(err)
	if k, c := calls("leases_event"), calls("count_ended_lease"); k != 0 || c != 0 {
		t.Errorf("a batch of %d claimed and completed called leases_event %d times and count_ended_lease %d times, want 0",
			n, k, c)
	}
	l := w.claim("w1")
	_, err = w.leases.Complete(w.ctx, p, fenceOf(l), nil, nil)
	w.must(err)
	if k, c := calls("leases_event"), calls("count_ended_lease"); k != 2 || c != 1 {
		t.Errorf("a single claim and completion called leases_event %d times and count_ended_lease %d times, want 2 and 1", k, c)
	}
}
