package lease

import (
	"container/list"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// A wake-up ("ticket") is a claimer's licence to try a claim because an
// item may be ready for it. A notification is one ticket; the notifier
// hands it to the longest waiting idle claimer of the project. The tickets
// a claimer held when its claim began are spent by that claim: a grant
// spends one (the rest go on to other claimers when it stops waiting), a
// claim that got nothing spends them all after handing as many on, one
// per free item it could not take (see waitFailed); a claim granted
// without a ticket withdraws one that nobody looked at yet (see steal).

// waitFilter is what decides which items a waiting claimer can take: the
// labels it asks for and the worker and token a continuity reservation
// must name.
type waitFilter struct {
	labels []string
	worker string
	token  *uuid.UUID
	// set is labels sorted and joined by "," (labels hold no comma): the
	// claimers of one set take the same items, reservations aside.
	set string
}

func newWaitFilter(labels []string, worker string, token *uuid.UUID) waitFilter {
	sorted := slices.Sorted(slices.Values(labels))
	return waitFilter{labels: labels, worker: worker, token: token, set: strings.Join(sorted, ",")}
}

// claimable is a free item as ClaimableItems reports it.
type claimable struct {
	labels []string
	// reserved: the continuity window is open for worker and token only.
	reserved bool
	worker   string
	token    *uuid.UUID
}

// takes reports whether a claimer with filter f could take the item.
func (f waitFilter) takes(c claimable) bool {
	for _, l := range f.labels {
		if !slices.Contains(c.labels, l) {
			return false
		}
	}
	if !c.reserved {
		return true
	}
	if c.worker != f.worker || (c.token == nil) != (f.token == nil) {
		return false
	}
	return c.token == nil || *c.token == *f.token
}

// waiter is one waiting claim (ClaimWait) on one notifier.
type waiter struct {
	project uuid.UUID
	filter  waitFilter
	elem    *list.Element
	// ch holds a value while tickets > 0 and the waiter has not yet
	// looked (at most one pending).
	ch      chan struct{}
	tickets int
	// untargeted of the tickets stand for any item (a notification), not
	// for a free item the waiter's filter takes (a hand-on).
	untargeted int
	// busy: the claimer is claiming (or about to) and does not need a
	// ticket to try.
	busy bool
	// rechecks is the recheck round of its label set the waiter last saw.
	rechecks uint64
	// rechecking: the claim under way is the project's periodic recheck.
	rechecking bool
}

func (w *waiter) give() {
	w.tickets++
	wake(w.ch)
}

// waitQueue is a project's waiting claimers on one notifier, longest
// waiting first.
type waitQueue struct {
	waiters *list.List
	// backlog counts tickets that found every claimer busy (at most one
	// per waiter: more could not be used before one is spent).
	backlog int
	// rechecks counts the recheck rounds of each label set.
	rechecks map[string]uint64
}

// deliver hands one ticket to the longest waiting idle claimer (other than
// except) that could take item (nil: any item). Failing that, a ticket for
// a known item goes to a busy claimer that could take it (it tries again
// after its claim); a ticket for any item is kept in the backlog.
func (q *waitQueue) deliver(item *claimable, except *waiter) (handed bool) {
	var busy *waiter
	for e := q.waiters.Front(); e != nil; e = e.Next() {
		w := e.Value.(*waiter)
		if w == except || (item != nil && !w.filter.takes(*item)) {
			continue
		}
		if !w.busy {
			w.busy = true
			w.give()
			if item == nil {
				w.untargeted++
			}
			return true
		}
		if busy == nil {
			busy = w
		}
	}
	switch {
	case item != nil && busy != nil:
		busy.give()
		return true
	case item == nil && q.backlog < q.waiters.Len():
		q.backlog++
		return true
	}
	return false
}

// waitJoin enters a claimer at the end of the project's queue, busy (its
// first claim needs no ticket).
func (n *Notifier) waitJoin(project uuid.UUID, f waitFilter) *waiter {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.projects[project]
	if q == nil {
		q = &waitQueue{waiters: list.New(), rechecks: map[string]uint64{}}
		n.projects[project] = q
	}
	w := &waiter{project: project, filter: f, ch: make(chan struct{}, 1), busy: true, rechecks: q.rechecks[f.set]}
	w.elem = q.waiters.PushBack(w)
	return w
}

// waitLeave removes the claimer and hands on the tickets it did not spend.
func (n *Notifier) waitLeave(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.projects[w.project]
	q.waiters.Remove(w.elem)
	if q.waiters.Len() == 0 {
		delete(n.projects, w.project)
		return
	}
	q.backlog = min(q.backlog, q.waiters.Len())
	for range w.tickets {
		q.deliver(nil, nil)
	}
}

// waitBegin marks the claimer busy and returns the tickets its claim
// spends.
func (n *Notifier) waitBegin(w *waiter) (tickets int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.busy = true
	return w.tickets
}

// waitLooking returns the label sets of the project's idle claimers
// (those a failed claim looks for free items for), the most idle
// claimers of one set, and the backlog now (a look that finds nothing
// free clears only tickets that were there before it looked).
func (n *Notifier) waitLooking(w *waiter) (sets []string, most, backlog int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.projects[w.project]
	count := map[string]int{}
	for e := q.waiters.Front(); e != nil; e = e.Next() {
		if o := e.Value.(*waiter); !o.busy {
			if count[o.filter.set] == 0 {
				sets = append(sets, o.filter.set)
			}
			count[o.filter.set]++
			most = max(most, count[o.filter.set])
		}
	}
	return sets, most, q.backlog
}

// waitGranted spends one of the tickets the claim began with; a granted
// recheck gives the next claimer a ticket, since more time gates may have
// opened.
func (n *Notifier) waitGranted(w *waiter, tickets int) {
	n.grants.Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.projects[w.project]
	if tickets > 0 {
		w.spend(1)
	} else {
		q.steal(w)
	}
	if w.rechecking {
		w.rechecking = false
		q.deliver(nil, w)
	}
}

// spend takes k tickets from the waiter, the untargeted ones first.
func (w *waiter) spend(k int) {
	w.tickets -= k
	w.untargeted = max(0, min(w.untargeted-k, w.tickets))
}

// steal withdraws one untargeted ticket after a claim without one was
// granted (its first claim, before it waited): it took an item that a
// notification's ticket stands for, and the claim that ticket would cost
// finds nothing. Only a ticket not yet looked at is withdrawn: one in the
// backlog, or one pending with a waiter that has not begun its claim.
func (q *waitQueue) steal(except *waiter) {
	if q.backlog > 0 {
		q.backlog--
		return
	}
	for e := q.waiters.Front(); e != nil; e = e.Next() {
		o := e.Value.(*waiter)
		if o == except || o.untargeted == 0 || len(o.ch) == 0 {
			continue
		}
		o.spend(1)
		if o.tickets == 0 {
			<-o.ch
			o.busy = false
		}
		return
	}
}

// waitFailed spends the tickets the claim began with, handing on as many
// (no more: a ticket never multiplies). Each item that is still free for
// an idle claimer (free: what ClaimableItems read after the
// claim, for the idle claimers' label sets) goes, as a ticket, to the
// longest waiting claimer that can take it: the failed claimer could not,
// so its filter did not match, or the item became free after its claim
// looked. With nothing free for anyone idle every ticket kept before the
// look is stale and dropped: the items they stood for were taken.
func (n *Notifier) waitFailed(w *waiter, tickets, backlog int, free []claimable) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.projects[w.project]
	w.spend(tickets)
	w.rechecking = false
	if w.tickets == 0 {
		select {
		case <-w.ch:
		default:
		}
	}
	handed := 0
	for i := 0; i < len(free) && handed < tickets; i++ {
		if q.deliver(&free[i], w) {
			handed++
		}
	}
	if len(free) == 0 {
		q.backlog -= min(q.backlog, backlog)
	}
}

// waitIdle marks the claimer as waiting; it takes a backlog ticket if it
// has none of its own.
func (n *Notifier) waitIdle(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w.tickets > 0 {
		wake(w.ch)
		return
	}
	w.busy = false
	if q := n.projects[w.project]; q.backlog > 0 {
		q.backlog--
		w.busy = true
		w.give()
	}
}

// waitRecheck reports whether the claimer, whose recheck interval passed,
// runs its label set's recheck: one per set and round, where a round ends
// when the interval of every waiting claimer of the set has passed once
// since the last. The recheck is a ticket, so a recheck that finds an item
// for someone else passes it on. With BroadcastWakeups every claimer
// rechecks.
func (n *Notifier) waitRecheck(w *waiter) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.BroadcastWakeups {
		return true
	}
	q := n.projects[w.project]
	if w.rechecks != q.rechecks[w.filter.set] {
		w.rechecks = q.rechecks[w.filter.set]
		return false
	}
	q.rechecks[w.filter.set]++
	w.rechecks = q.rechecks[w.filter.set]
	w.rechecking = true
	w.busy = true
	w.tickets++
	return true
}
