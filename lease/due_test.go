package lease_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// longRecheck keeps the periodic recheck out of a test's way: only a
// notification or a time gate's instant wakes a waiting claim.
const longRecheck = time.Minute

// dueWait is how long the waiting claims of the time gate tests wait: far
// past the gates' instants, far short of longRecheck.
const dueWait = 20 * time.Second

// setupDue is a database of the test's own (claims wait and LISTEN) with
// a lease service judging by the database's clock, as a server does.
func setupDue(t *testing.T) (fixture, *lease.Service) {
	t.Helper()
	cfg := lease.Config{WaitRecheck: longRecheck, RetryBackoff: time.Hour, MaxRetryBackoff: time.Hour, MaxFailures: 10}
	f := setupDB(t, cfg)
	return f, lease.NewService(f.pool, clock.Database{}, f.cfg)
}

// inBackoff claims it, fails it, and sets its retry backoff to end after
// in by the database's clock (the service's backoff is an hour).
func inBackoff(t *testing.T, f fixture, leases *lease.Service, it graph.Item, in time.Duration) {
	t.Helper()
	c, err := leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "failer", Capabilities: it.Requires})
	if err != nil || c.Item.ID != it.ID {
		t.Fatalf("claim to fail = %v, %v; want %v", c.Item.ID, err, it.ID)
	}
	if _, err := leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "retry soon"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE items SET not_before = clock_timestamp() + make_interval(secs => $3)
		WHERE project_id = $1 AND id = $2 AND in_backoff`, f.project, it.ID, in.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// notified waits until n has received the k notifications the test's own
// writes sent: one that reached n after a waiting claim joined would give
// it one claim more than the test counts.
func notified(t *testing.T, n *lease.Notifier, k int) {
	t.Helper()
	for range k {
		n.TestSignals.Notified.Wait(t)
	}
}

// waitFor runs one waiting claim on n and returns what it got.
func waitFor(f fixture, leases *lease.Service, n *lease.Notifier, req lease.ClaimRequest) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		c, err := leases.ClaimWait(f.ctx, f.project, req, dueWait, n)
		out <- waitResult{req.Worker, c, err}
	}()
	return out
}

// mustGrant fails unless r is a grant of item.
func mustGrant(t *testing.T, r waitResult, item uuid.UUID) {
	t.Helper()
	if r.err != nil || r.c.Item.ID != item {
		t.Fatalf("%s: waiting claim = %v, %v; want %v at its time gate's instant (the recheck is %v away)",
			r.worker, r.c.Item.ID, r.err, item, longRecheck)
	}
}

// TestWakeAtBackoffEnd: a claim that waits while the only item waits out
// a retry backoff is granted the item once the backoff ends, though no
// write notifies and the recheck is a minute away.
func TestWakeAtBackoffEnd(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	n := startWaitNotifier(t, f)
	it := f.item(t, graph.NewItem{})
	inBackoff(t, f, leases, it, 2*time.Second)
	notified(t, n, 2) // the item's creation and its failure
	r := <-waitFor(f, leases, n, lease.ClaimRequest{Worker: "w1"})
	mustGrant(t, r, it.ID)
	if s := n.Stats(); s.Claims != 2 || s.DueWakes == 0 {
		t.Errorf("stats %+v; want 2 claims (the first, the wake at the instant) and a due wake-up", s)
	}
}

// TestWakeAtReservationEnd: an item reserved for another worker is granted
// to a waiting claim once the reservation window ends.
func TestWakeAtReservationEnd(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	n := startWaitNotifier(t, f)
	it := f.item(t, graph.NewItem{})
	if _, err := f.pool.Exec(f.ctx, `UPDATE items SET preferred_worker = 'other', preferred_until = clock_timestamp() + interval '2 seconds'
		WHERE project_id = $1 AND id = $2`, f.project, it.ID); err != nil {
		t.Fatal(err)
	}
	r := <-waitFor(f, leases, n, lease.ClaimRequest{Worker: "w1"})
	mustGrant(t, r, it.ID)
}

// TestWakeAtReservationEndNotified: an item that becomes ready reserved
// for a worker that is not waiting is a notification no waiter takes; a
// claim already waiting is still granted the item when the window ends.
func TestWakeAtReservationEndNotified(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	n := startWaitNotifier(t, f)
	out := waitFor(f, leases, n, lease.ClaimRequest{Worker: "w1"})
	n.TestSignals.Idle.Wait(t)
	var id uuid.UUID
	if err := f.pool.QueryRow(f.ctx, `INSERT INTO items (project_id, title, created_by, preferred_worker, preferred_until)
		VALUES ($1, 'reserved', 'test', 'other', clock_timestamp() + interval '2 seconds') RETURNING id`, f.project).Scan(&id); err != nil {
		t.Fatal(err)
	}
	mustGrant(t, <-out, id)
}

// TestWakeAtInstantOnce: a due item the waiting claim cannot take (it
// requires a capability the claimer lacks) wakes it once at the instant,
// and the claim that finds nothing waits again without being woken for
// the same instant: two claims in all, not a loop. An item whose labels no
// waiter asks for wakes nobody.
func TestWakeAtInstantOnce(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	n := startWaitNotifier(t, f)
	gpu := f.item(t, graph.NewItem{Labels: []string{"cpu"}, Requires: []string{"gpu"}})
	other := f.item(t, graph.NewItem{Labels: []string{"elsewhere"}})
	inBackoff(t, f, leases, gpu, time.Second)
	inBackoff(t, f, leases, other, time.Second)
	notified(t, n, 4) // each item's creation and failure
	out := make(chan waitResult, 1)
	go func() {
		c, err := leases.ClaimWait(f.ctx, f.project, lease.ClaimRequest{Worker: "cpu", Labels: []string{"cpu"}}, 4*time.Second, n)
		out <- waitResult{"cpu", c, err}
	}()
	n.TestSignals.Idle.Wait(t) // the first claim
	n.TestSignals.Due.Wait(t)  // the instant
	r := <-out
	if !errors.Is(r.err, lease.ErrNothingReady) {
		t.Fatalf("waiting claim = %v, %v; want nothing ready", r.c.Item.ID, r.err)
	}
	if s := n.Stats(); s.Claims != 2 || s.DueWakes > 2 {
		t.Errorf("%d claims and %d due wake-ups, want 2 claims (the first, one at the instant) and at most 2 wake-ups (one per instant): %+v",
			s.Claims, s.DueWakes, s)
	}
}

// TestWakeAtInstantReplicas: two replicas (two notifiers on one database)
// each wake their own waiter when two items come out of their backoff at
// once, and each waiter is granted one.
func TestWakeAtInstantReplicas(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	ns := []*lease.Notifier{startWaitNotifier(t, f), startWaitNotifier(t, f)}
	items := []graph.Item{f.item(t, graph.NewItem{}), f.item(t, graph.NewItem{})}
	for _, it := range items {
		inBackoff(t, f, leases, it, 2*time.Second)
	}
	a := waitFor(f, leases, ns[0], lease.ClaimRequest{Worker: "a"})
	b := waitFor(f, leases, ns[1], lease.ClaimRequest{Worker: "b"})
	ra, rb := <-a, <-b
	if ra.err != nil || rb.err != nil {
		t.Fatalf("a: %v, %v; b: %v, %v; want each granted an item at the instant", ra.c.Item.ID, ra.err, rb.c.Item.ID, rb.err)
	}
	if ra.c.Item.ID == rb.c.Item.ID {
		t.Fatalf("both granted %v", ra.c.Item.ID)
	}
}

// TestDueProbeReadsRanges: the read of a project's next time gates is two
// index range reads from the floor on, not a walk of every reservation
// window that ever ended (preferred_until stays set once it passed) nor of
// every backoff already due. Its plan (auto_explain, with ANALYZE, on the
// notifier's pool of one connection) must not read and throw away rows.
func TestDueProbeReadsRanges(t *testing.T) {
	t.Parallel()
	f, leases := setupDue(t)
	if _, err := f.pool.Exec(f.ctx, `
		INSERT INTO items (project_id, title, created_by, preferred_worker, preferred_until, failures, not_before, in_backoff)
		SELECT $1, 'ended ' || g, 'test', 'w', now() - g * interval '1 second',
		       CASE WHEN g % 2 = 0 THEN 1 ELSE 0 END,
		       CASE WHEN g % 2 = 0 THEN now() - g * interval '1 second' END, g % 2 = 0
		FROM generate_series(1, 2000) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	pool, plans := explainedPool(t, f.pool)
	n := lease.NewNotifier(pool, nil)
	n.TestSignals.Listening.Init()
	n.Start(f.ctx)
	t.Cleanup(n.Stop)
	n.TestSignals.Listening.Wait(t)
	plans()
	c, err := leases.ClaimWait(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", Labels: []string{"absent"}}, time.Second, n)
	if !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("waiting claim = %v, %v; want nothing ready", c.Item.ID, err)
	}
	got := plans()
	if len(got) == 0 {
		t.Fatal("no plan of the probe read items")
	}
	for _, p := range got {
		for _, line := range strings.Split(p, "\n") {
			if _, rest, ok := strings.Cut(line, "Rows Removed by "); ok {
				var filter string
				var removed int
				if _, err := fmt.Sscanf(rest, "%s Filter: %d", &filter, &removed); err == nil && removed > 10 {
					t.Fatalf("the probe read and discarded %d rows:\n%s", removed, p)
				}
				if _, err := fmt.Sscanf(rest, "Filter: %d", &removed); err == nil && removed > 10 {
					t.Fatalf("the probe read and discarded %d rows:\n%s", removed, p)
				}
			}
		}
	}
}
