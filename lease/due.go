package lease

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

// How a Notifier wakes a waiter when a time gate opens (see wake.go for the
// turns). An item can become claimable without a write, so without a
// notification: its retry backoff ends (items.not_before) or its
// continuity reservation window ends (items.preferred_until, after which
// any worker may take it). Each time a waiting claim finds nothing, and
// each time a notification names a reserved item (the waiters it skipped
// may take the item when the window ends), the notifier reads the
// project's next such items after a floor (NextDueItems: two index
// probes, the instants and the database's now in one statement) and sets
// a timer for the difference; when it fires, each item due by then becomes
// a readyEvent as if its notification had come (rule 1: one idle waiter
// whose filter takes it gets a turn, none: it is dropped), and the
// notifier reads the next items.
//
// The time gates are ordered by instant, then by item id (dueKey), and
// the floor is a gate in that order: the last one turned into an event.
// A read returns at most maxDueItems gates; when more open at one
// instant, the read after the tick starts right after the last one turned
// into an event, at the same instant, and its timer fires at once. So
// every item due at an instant becomes an event, however many are due at
// once. The floor never moves back while the project has waiters on this
// notifier. The read after a waiting claim found nothing starts, when
// later, at the probe's instant less the time since the claim began (an
// item due before that claim began was due for it, so a claim that could
// take it found it); the read after a tick starts at the floor alone (the
// claims that tick wakes began at its instant, not before the items due
// since). So each gate is turned into an event once, and a due item that
// no waiter here can take (labels, capabilities) costs at most one claim,
// never a loop.
//
// The timer waits the difference of two instants of the database (the
// gate's and the read's now): the replica's wall clock, ahead or behind,
// plays no part; only the rates of the two clocks over the wait could
// differ, and a claim woken a little early is judged by the database's
// clock like every claim: it finds nothing and resolves the event, and the
// recheck (Config.WaitRecheck) remains the safety net for that and for a
// read that failed. Every replica reads and wakes its own waiters. The
// reads the notifier makes on its own (after a tick, after a reservation's
// notification) run on its life (Start to Stop): Stop cancels them and
// waits for them, and a tick after Stop reads nothing.

// maxDueItems bounds the items one probe reads (on each side).
const maxDueItems = 32

// dueMargin is added to the time since a claim began when it sets the
// floor: the replica's and the database's clocks may run at slightly
// different rates, and an item counted twice costs one claim at most.
const dueMargin = 50 * time.Millisecond

// dueKey orders the time gates: by the database's instant, ties by item
// id in PostgreSQL's order of uuids (their bytes).
type dueKey struct {
	at time.Time
	id uuid.UUID
}

// after reports whether k comes after o.
func (k dueKey) after(o dueKey) bool {
	if !k.at.Equal(o.at) {
		return k.at.After(o.at)
	}
	return bytes.Compare(k.id[:], o.id[:]) > 0
}

// dueItem is one item of a probe: when it can be claimed, and what the
// notification of an item that became ready then would have said.
type dueItem struct {
	key   dueKey // the database's instant, and the item
	event readyItem
}

// dueTimer is a queue's wait for its next time gate.
type dueTimer struct {
	// floor is the last gate turned into an event (zero: none yet).
	floor dueKey
	// at is the instant the timer is set for (zero: none), items those
	// due at it.
	at    time.Time
	items []dueItem
	timer *time.Timer
}

// stop cancels the timer.
func (d *dueTimer) stop() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.at = time.Time{}
	d.items = nil
}

// probeDue reads the project's next time gates and sets the queue's timer
// for the earliest; since is how long ago the claim that found nothing
// began (the floor; see above). A failed probe is logged: the recheck
// still runs.
func (n *Notifier) probeDue(ctx context.Context, project uuid.UUID, since time.Duration) {
	lookback := (since + dueMargin).Seconds()
	n.probe(ctx, project, &lookback)
}

// probe reads the project's next time gates after the queue's floor, or
// after the database's instant less lookback seconds when that is later
// (nil: the floor alone), and sets the queue's timer for the earliest.
func (n *Notifier) probe(ctx context.Context, project uuid.UUID, lookback *float64) {
	defer n.TestSignals.Probed.Send(project)
	n.mu.Lock()
	q := n.queues[project]
	var after *time.Time
	var afterID uuid.UUID
	if q != nil && !q.due.floor.at.IsZero() {
		floor := q.due.floor
		after, afterID = &floor.at, floor.id
	}
	n.mu.Unlock()
	if q == nil {
		return
	}
	if after == nil && lookback == nil {
		// No floor yet: the gates due from now on.
		margin := dueMargin.Seconds()
		lookback = &margin
	}
	n.stats.probes.Add(1)
	rows, err := dbq.New().NextDueItems(ctx, n.pool, dbq.NextDueItemsParams{
		ProjectID: project, After: after, AfterID: afterID, LookbackSecs: lookback, MaxItems: maxDueItems,
	})
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("reading the next time gates of waiting claims", "project", project, "err", err)
		}
		return
	}
	if len(rows) == 0 {
		return
	}
	items := make([]dueItem, 0, len(rows))
	for _, r := range rows {
		it := dueItem{key: dueKey{at: r.Due, id: r.ID}, event: readyItem{ID: r.ID, Labels: r.Labels}}
		if r.Reserved {
			worker := r.Worker
			it.event.Worker = &worker
			if r.HasToken {
				token := r.Token
				it.event.Token = &token
			}
		}
		items = append(items, it)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queues[project] != q {
		return // its waiters have all left
	}
	q.scheduleDue(n, project, items, rows[0].Now)
}

// scheduleDue sets the timer of q for the earliest of items (in key order;
// instants of the database, whose now was dbNow) after its floor, unless
// it is set for an earlier instant already; items due at the instant it
// is set for join it.
func (q *waitQueue) scheduleDue(n *Notifier, project uuid.UUID, items []dueItem, dbNow time.Time) {
	d := &q.due
	for len(items) > 0 && !items[0].key.after(d.floor) {
		items = items[1:] // turned into events already (a probe that overtook another)
	}
	if len(items) == 0 {
		return
	}
	first := items[0].key.at
	set := d.at.IsZero() || first.Before(d.at)
	if !set && !first.Equal(d.at) {
		return // the timer is set for an earlier instant
	}
	if set {
		d.stop()
		d.at = first
	}
	for _, it := range items {
		if !it.key.at.Equal(d.at) {
			break
		}
		d.items = append(d.items, it) // dueTick skips an item named twice
	}
	if set {
		at := d.at
		d.timer = time.AfterFunc(at.Sub(dbNow), func() { n.dueTick(project, q, at) })
	}
}

// dueTick turns the items due at the instant at into events (rule 1) and
// reads the next gates from the last of them on (more may be due at the
// same instant than a read returns).
func (n *Notifier) dueTick(project uuid.UUID, q *waitQueue, at time.Time) {
	n.mu.Lock()
	if n.queues[project] != q || !q.due.at.Equal(at) {
		n.mu.Unlock()
		return // its waiters have all left, or an earlier instant replaced it
	}
	items := q.due.items
	q.due.stop()
	n.stats.dueWakes.Add(1)
	seen := map[uuid.UUID]bool{}
	for _, it := range items {
		if it.key.after(q.due.floor) {
			q.due.floor = it.key
		}
		if seen[it.event.ID] {
			continue
		}
		seen[it.event.ID] = true
		n.seq++
		q.event(n, &it.event)
	}
	ctx, live := n.backgroundLocked()
	n.mu.Unlock()
	n.TestSignals.Due.Send(project)
	if !live {
		n.TestSignals.Probed.Send(project)
		return
	}
	defer n.bg.Done()
	n.probe(ctx, project, nil)
}
