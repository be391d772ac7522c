package lease

import (
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
// may take the item when the window ends), the notifier reads the project's next such items after a floor
// (NextDueItems: two index probes, the instants and the database's now in
// one statement) and sets a timer for the difference; when it fires, each
// item due by then becomes a readyEvent as if its notification had come
// (rule 1: one idle waiter whose filter takes it gets a turn, none: it is
// dropped), and the notifier reads the next instants.
//
// The floor never moves back while the project has waiters on this
// notifier: it is the latest instant whose items were turned into events,
// or, when later, the probe's instant less the time since the waiter's
// claim began (an item due before that claim began was due for it, so a
// claim that could take it found it). So each instant is turned into
// events once, and a due item that no waiter here can take (labels,
// capabilities) costs at most one claim, never a loop. A claim that
// begins when the timer fires is judged by the database's clock like
// every claim; a replica whose clock runs a little fast wakes a claim that
// finds nothing and resolves the event, and the recheck (Config.
// WaitRecheck) remains the safety net for that, for more than
// maxDueItems items due at one instant, and for a probe that failed.
// Every replica probes and wakes its own waiters.

// maxDueItems bounds the items one probe reads (on each side).
const maxDueItems = 32

// dueMargin is added to the time since a claim began when it sets the
// floor: the replica's and the database's clocks may run at slightly
// different rates, and an item counted twice costs one claim at most.
const dueMargin = 50 * time.Millisecond

// dueItem is one item of a probe: when it can be claimed, and what the
// notification of an item that became ready then would have said.
type dueItem struct {
	at    time.Time // the database's instant
	event readyItem
}

// dueTimer is a queue's wait for its next time gate.
type dueTimer struct {
	// floor is the latest instant whose items became events.
	floor time.Time
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
	n.mu.Lock()
	q := n.queues[project]
	var after *time.Time
	if q != nil && !q.due.floor.IsZero() {
		floor := q.due.floor
		after = &floor
	}
	n.mu.Unlock()
	if q == nil {
		return
	}
	n.stats.probes.Add(1)
	rows, err := dbq.New().NextDueItems(ctx, n.pool, dbq.NextDueItemsParams{
		ProjectID: project, After: after, LookbackSecs: (since + dueMargin).Seconds(), MaxItems: maxDueItems,
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
		it := dueItem{at: r.Due, event: readyItem{ID: r.ID, Labels: r.Labels}}
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

// scheduleDue sets the timer of q for the earliest of items (instants of
// the database, whose now was dbNow), unless it is set for an earlier
// instant already; items due at the instant it is set for join it.
func (q *waitQueue) scheduleDue(n *Notifier, project uuid.UUID, items []dueItem, dbNow time.Time) {
	d := &q.due
	first := items[0].at
	if !first.After(d.floor) {
		return // turned into events already (a probe that overtook another)
	}
	set := d.at.IsZero() || first.Before(d.at)
	if !set && !first.Equal(d.at) {
		return // the timer is set for an earlier instant
	}
	if set {
		d.stop()
		d.at = first
	}
	for _, it := range items {
		if !it.at.Equal(d.at) {
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
// reads the next instants.
func (n *Notifier) dueTick(project uuid.UUID, q *waitQueue, at time.Time) {
	n.mu.Lock()
	if n.queues[project] != q || !q.due.at.Equal(at) {
		n.mu.Unlock()
		return // its waiters have all left, or an earlier instant replaced it
	}
	items := q.due.items
	q.due.stop()
	q.due.floor = at
	n.stats.dueWakes.Add(1)
	seen := map[uuid.UUID]bool{}
	for _, it := range items {
		if seen[it.event.ID] {
			continue
		}
		seen[it.event.ID] = true
		n.seq++
		q.event(n, &it.event)
	}
	n.mu.Unlock()
	n.TestSignals.Due.Send(project)
	n.probeDue(context.Background(), project, 0)
}
