package lease

import (
	"container/list"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// How a Notifier hands out turns to claim (see ClaimWait for the waiter's
// side). A "turn" is one claim transaction a waiting claimer may run; the
// rules below decide who gets one, and they never lose one.
//
// Every notification that names an item becomes a readyEvent with the next
// sequence number of the notifier (seq). An event is pending until it is
// resolved, and a pending event is held by at most one waiter at a time:
//
//  1. A new event goes to the longest-waiting idle waiter whose filter
//     takes the item (its labels are on the item, and a reservation, if
//     any, names its worker and token). If none is idle it stays pending,
//     unheld, unless no waiter of the project could ever take it (then it
//     is dropped: a claimer that arrives later claims before it waits).
//  2. A waiter notes the notifier's seq ("since") before each claim
//     transaction begins. Notifications are delivered only once the
//     transaction that sent them is visible, so the claim's snapshot sees
//     the items of every event up to since.
//  3. A claim that finds nothing resolves every pending event up to its
//     since that its filter takes: its snapshot had no item it could take,
//     so the items those events name were taken, are no longer ready, or
//     wait behind a time gate; and an item its filter takes is one every
//     filter that takes the event takes (the reservation is part of the
//     match), so no other waiter could take it either. Whatever makes such
//     an item ready again sends a new notification.
//  4. A grant resolves the event of the item it took, whoever held it.
//  5. A waiter that leaves holding an unresolved event (a grant of another
//     item, its deadline, its context, an error) passes the event on by
//     rule 1. A claim that fails with an error may have locked an item and
//     rolled back, hiding it from a concurrent claim that then resolved it
//     by rule 3: such an error wakes every waiter of the project once.
//  6. A waiter that becomes idle takes the oldest unheld pending event its
//     filter takes.
//
// So an unresolved event is always held by a waiter whose claim will begin
// after the event arrived, or is unheld while no idle waiter can take it;
// and it is resolved only when its item was granted here or a claim that
// saw it found nothing for a filter that takes it. A new waiter claims
// once before it waits (it subscribes first, so an item that becomes ready
// during that claim is an event it can be given), which covers what became
// ready before it came.
//
// A new waiter may skip that claim (join) when the queue holds a proof for
// its exact filter (labels, worker, token): the filter's latest claim found
// nothing, in the current recheck round of its label set. Since that claim,
// an item can have become ready for the filter only through a notification
// (time gates aside: the round's recheck covers those), and every such
// event is pending (the waiter takes it by rule 6), was resolved by rules
// 3 and 4, or was dropped by rule 1; a drop breaks every proof whose filter
// takes the event, and a broadcast breaks them all. So what the skipped
// claim would have found is a pending event the new waiter can be given.
// This is what makes an agent that waits again after each grant cost no
// claim for the wait.
//
// What no notification reports wakes every waiter of a project once (a
// broadcast; one claiming then claims again): the LISTEN connection coming
// back (notifications sent meanwhile are lost), a notification naming only
// the project (an old payload, or labels too long for one), more pending
// events than maxPending. Time gates that open without a write (the end of
// a retry backoff or of a continuity window) become events at their
// instant (due.go). A ready item whose labels are edited, an item hidden
// from a claim by a lock another writer held, and a time gate the due
// timer missed are found by the recheck: every Config.WaitRecheck one waiter of each
// label set claims (one per notifier), and a recheck that is granted gives
// the next waiter of its set a recheck turn, until one finds nothing.
//
// With several replicas every notifier receives every notification and
// gives one turn to one of its own waiters: with R replicas waiting on a
// project an item costs at most R woken claims (one is granted, the others
// find nothing), and no replica depends on another being up. A woken claim
// that takes another item (one whose notification reached its notifier
// later, or a better one) hands its turn on (rule 5): one claim more.

// maxPending bounds a project's pending events on one notifier; one more
// clears them and wakes every waiter of the project instead.
const maxPending = 1024

// maxProofs bounds a project's proofs on one notifier (one per filter that
// found nothing, so per worker label); one more clears them, and the next
// waiting claim of each filter claims before it waits.
const maxProofs = 4096

// readyNote is a parsed workgraph_ready payload: the project, and the
// item when the payload names it.
type readyNote struct {
	project uuid.UUID
	item    *readyItem
}

// readyItem is what a notification says of the item that became ready.
type readyItem struct {
	ID     uuid.UUID  `json:"item"`
	Labels []string   `json:"labels"`
	Worker *string    `json:"worker"`
	Token  *uuid.UUID `json:"token"`
}

// parseReady reads "<project>" or "<project> <item JSON>".
func parseReady(payload string) (readyNote, error) {
	head, rest, named := strings.Cut(payload, " ")
	project, err := uuid.Parse(head)
	if err != nil {
		return readyNote{}, err
	}
	if !named {
		return readyNote{project: project}, nil
	}
	var it readyItem
	if err := json.Unmarshal([]byte(rest), &it); err != nil {
		return readyNote{}, err
	}
	return readyNote{project: project, item: &it}, nil
}

// waitFilter is what decides which items a waiting claimer can take: the
// labels it asks for, and its worker and token for a reservation.
type waitFilter struct {
	labels []string
	worker string
	token  *uuid.UUID
	// set is the labels sorted and joined: the recheck's unit.
	set string
	// key names the filter: claimers of one key take the same items.
	key string
}

func newWaitFilter(req ClaimRequest) waitFilter {
	sorted := slices.Sorted(slices.Values(req.Labels))
	f := waitFilter{labels: req.Labels, worker: req.Worker, token: req.TokenID, set: strings.Join(sorted, ",")}
	f.key = f.set + "\x00" + f.worker + "\x00"
	if f.token != nil {
		f.key += f.token.String()
	}
	// Capabilities decide which items a claim takes too (requires), though
	// the notification does not carry them: a woken claim that cannot take
	// its item passes the wake-up on.
	f.key += "\x00" + strings.Join(slices.Sorted(slices.Values(req.Capabilities)), ",")
	return f
}

// labelSet is the recheck of one label set's waiters in a queue: every
// interval (the Config.WaitRecheck of the set's first waiter) a new round
// begins and the longest-waiting idle waiter of the set gets a recheck
// turn. The rounds follow the timer, not the waiters, so a waiter that
// waits for less than the interval still finds its proof stale once a
// round has passed.
type labelSet struct {
	waiters int
	round   uint64
	timer   *time.Timer
}

// proof records that a claim with filter found nothing, in recheck round
// round of its label set (see join).
type proof struct {
	filter waitFilter
	round  uint64
}

// takes reports whether a claimer with filter f can take the item the
// event names (ClaimItem's test, but for the time gates).
func (f waitFilter) takes(e *readyEvent) bool {
	for _, l := range f.labels {
		if !slices.Contains(e.labels, l) {
			return false
		}
	}
	if e.worker == nil {
		return true
	}
	if *e.worker != f.worker || (e.token == nil) != (f.token == nil) {
		return false
	}
	return e.token == nil || *e.token == *f.token
}

// readyEvent is one notification that named an item.
type readyEvent struct {
	seq    uint64
	item   uuid.UUID
	labels []string
	worker *string
	token  *uuid.UUID
	holder *waiter
	elem   *list.Element // in waitQueue.pending; nil once resolved
}

// waiter is one waiting claim (ClaimWait) on a notifier.
type waiter struct {
	project uuid.UUID
	filter  waitFilter
	// turn receives a value when the waiter may claim (at most one
	// pending: a turn is given only to an idle waiter).
	turn chan struct{}
	// idle is its place in waitQueue.idle while it waits for a turn.
	idle *list.Element
	// claiming: its claim transaction has begun (begin) and not yet ended.
	claiming bool
	// since is the notifier's seq when its latest claim began.
	since uint64
	// event is the event its turn is for (nil: its first claim, a
	// recheck or a broadcast).
	event *readyEvent
	// again: a broadcast came while it claimed; it claims once more.
	again bool
	// recheck: its turn is its label set's recheck.
	recheck bool
}

// waitQueue is one project's waiting claims on one notifier.
type waitQueue struct {
	waiters map[*waiter]struct{}
	idle    *list.List // of *waiter, longest waiting first
	pending *list.List // of *readyEvent, oldest first
	byItem  map[uuid.UUID]*readyEvent
	sets    map[string]*labelSet
	// proofs are the filters whose latest claim found nothing, by key,
	// while nothing has happened that the pending events do not show.
	proofs map[string]*proof
	// due is its wait for the next time gate (due.go).
	due dueTimer
}

func newWaitQueue() *waitQueue {
	return &waitQueue{
		waiters: map[*waiter]struct{}{}, idle: list.New(), pending: list.New(),
		byItem: map[uuid.UUID]*readyEvent{}, sets: map[string]*labelSet{}, proofs: map[string]*proof{},
	}
}

// give hands w (idle) a turn, for e (nil: no event).
func (q *waitQueue) give(w *waiter, e *readyEvent) {
	if w.idle != nil {
		q.idle.Remove(w.idle)
		w.idle = nil
	}
	w.event = e
	if e != nil {
		e.holder = w
	}
	wake(w.turn)
}

// dispatch gives the unheld pending event e to the longest-waiting idle
// waiter that can take it (rule 1); with none idle it stays pending, and it
// is dropped when no waiter of the project could take it.
func (q *waitQueue) dispatch(e *readyEvent) {
	if e.elem == nil || e.holder != nil {
		return
	}
	for el := q.idle.Front(); el != nil; el = el.Next() {
		if w := el.Value.(*waiter); w.filter.takes(e) {
			q.give(w, e)
			return
		}
	}
	for w := range q.waiters {
		if w.filter.takes(e) {
			return
		}
	}
	// Dropped: a claimer that arrives later and could take the item must
	// claim before it waits.
	for k, p := range q.proofs {
		if p.filter.takes(e) {
			delete(q.proofs, k)
		}
	}
	q.resolve(e)
}

// resolve removes e from the pending events.
func (q *waitQueue) resolve(e *readyEvent) {
	if e.elem == nil {
		return
	}
	q.pending.Remove(e.elem)
	e.elem = nil
	if q.byItem[e.item] == e {
		delete(q.byItem, e.item)
	}
	if e.holder != nil && e.holder.event == e {
		e.holder.event = nil
	}
	e.holder = nil
}

// settle makes w idle: it takes the oldest unheld pending event it can
// take (rule 6), else it waits in the idle list (and reports whether).
func (q *waitQueue) settle(w *waiter) (idle bool) {
	for el := q.pending.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*readyEvent); e.holder == nil && w.filter.takes(e) {
			q.give(w, e)
			return false
		}
	}
	w.idle = q.idle.PushBack(w)
	return true
}

// broadcast gives every waiter of the project one claim that begins after
// now: an idle one a turn, a claiming one another claim after this one.
func (q *waitQueue) broadcast() {
	clear(q.proofs)
	for w := range q.waiters {
		switch {
		case w.idle != nil:
			q.give(w, nil)
		case w.claiming:
			w.again = true
		}
	}
}

// passRecheck gives the next idle waiter of set a recheck turn.
func (q *waitQueue) passRecheck(set string) {
	for el := q.idle.Front(); el != nil; el = el.Next() {
		if w := el.Value.(*waiter); w.filter.set == set {
			w.recheck = true
			q.give(w, nil)
			return
		}
	}
}

// note takes one notification (rule 1, or a broadcast).
func (n *Notifier) note(r readyNote) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	q := n.queues[r.project]
	if q == nil {
		return
	}
	if r.item == nil {
		n.stats.broadcasts.Add(1)
		q.broadcast()
		return
	}
	q.event(n, r.item)
	if r.item.Worker != nil {
		// Reserved: the waiters here that the event skipped may take the
		// item when the window ends, an instant no write reports (due.go).
		if ctx, live := n.backgroundLocked(); live {
			go func() {
				defer n.bg.Done()
				n.probeDue(ctx, r.project, 0)
			}()
		}
	}
}

// event makes it a pending event with the notifier's seq and dispatches it
// (rule 1); past maxPending it wakes every waiter of the project instead.
func (q *waitQueue) event(n *Notifier, it *readyItem) {
	if old := q.byItem[it.ID]; old != nil {
		// The item became ready again: the newer event stands for it.
		q.resolve(old)
	}
	if q.pending.Len() >= maxPending {
		n.stats.broadcasts.Add(1)
		for q.pending.Len() > 0 {
			q.resolve(q.pending.Front().Value.(*readyEvent))
		}
		q.broadcast()
		return
	}
	e := &readyEvent{seq: n.seq, item: it.ID, labels: it.Labels, worker: it.Worker, token: it.Token}
	e.elem = q.pending.PushBack(e)
	q.byItem[e.item] = e
	q.dispatch(e)
}

// noteAll wakes every waiter of every project (the LISTEN connection came
// back).
func (n *Notifier) noteAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	for _, q := range n.queues {
		n.stats.broadcasts.Add(1)
		q.broadcast()
	}
}

// join enters a waiting claim. Its first claim begins now (claim), unless
// the queue holds a proof for its filter from this recheck round: a claim
// with the same filter found nothing since the round began, and everything
// that may have made an item ready for it since is a pending event (an
// event no waiter could take was dropped and broke the proofs that take
// it; a broadcast breaks them all). Then it waits at once, taking a
// pending event it can take (rule 6).
func (n *Notifier) join(project uuid.UUID, f waitFilter, every time.Duration) (w *waiter, claim bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.queues[project]
	if q == nil {
		q = newWaitQueue()
		n.queues[project] = q
	}
	w = &waiter{project: project, filter: f, turn: make(chan struct{}, 1), since: n.seq}
	q.waiters[w] = struct{}{}
	ls := q.sets[f.set]
	if ls == nil {
		ls = &labelSet{}
		q.sets[f.set] = ls
		ls.timer = time.AfterFunc(every, func() { n.recheckTick(project, f.set, ls, every) })
	}
	ls.waiters++
	n.stats.waits.Add(1)
	if p := q.proofs[f.key]; p != nil && p.round == ls.round {
		n.stats.skipped.Add(1)
		q.settle(w)
		return w, false
	}
	w.claiming = true
	n.stats.claims.Add(1)
	return w, true
}

// begin notes that w's claim begins now (rule 2).
func (n *Notifier) begin(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.claiming = true
	w.since = n.seq
	n.stats.claims.Add(1)
}

// granted resolves the event of the item w's claim took (rule 4).
func (n *Notifier) granted(w *waiter, item uuid.UUID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stats.grants.Add(1)
	q := n.queues[w.project]
	w.claiming = false
	if e := q.byItem[item]; e != nil {
		q.resolve(e)
	}
	if w.recheck {
		// A time gate opened; more may have.
		w.recheck = false
		q.passRecheck(w.filter.set)
	}
}

// found resolves a grant outside a waiting claim (a claim with no wait).
func (n *Notifier) found(project, item uuid.UUID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.queues[project]; q != nil {
		if e := q.byItem[item]; e != nil {
			q.resolve(e)
		}
	}
}

// nothing records that w's claim found nothing (rule 3) and makes it
// idle, or gives it its next claim at once.
func (n *Notifier) nothing(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.queues[w.project]
	w.claiming = false
	round := q.sets[w.filter.set].round
	if w.recheck {
		// Every filter of the set is fresh again: what time gates opened
		// before this claim began, it would have found.
		for _, p := range q.proofs {
			if p.filter.set == w.filter.set {
				p.round = round
			}
		}
	}
	if len(q.proofs) >= maxProofs {
		clear(q.proofs)
	}
	q.proofs[w.filter.key] = &proof{filter: w.filter, round: round}
	w.recheck = false
	for el := q.pending.Front(); el != nil; {
		e := el.Value.(*readyEvent)
		el = el.Next()
		if e.seq > w.since {
			break
		}
		if w.filter.takes(e) {
			q.resolve(e)
		}
	}
	w.event = nil
	if w.again {
		w.again = false
		q.give(w, nil)
		return
	}
	if q.settle(w) {
		n.TestSignals.Idle.Send(w.project)
	}
}

// leave ends a waiting claim: an event it still holds goes on (rule 5);
// after an error every waiter of the project is woken.
func (n *Notifier) leave(w *waiter, failed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.queues[w.project]
	delete(q.waiters, w)
	ls := q.sets[w.filter.set]
	ls.waiters--
	if ls.waiters == 0 {
		// No rounds while the set has no waiters: its proofs go too.
		ls.timer.Stop()
		delete(q.sets, w.filter.set)
		for k, p := range q.proofs {
			if p.filter.set == w.filter.set {
				delete(q.proofs, k)
			}
		}
	}
	if w.idle != nil {
		q.idle.Remove(w.idle)
		w.idle = nil
	}
	if len(q.waiters) == 0 {
		q.due.stop()
		delete(n.queues, w.project)
		return
	}
	if e := w.event; e != nil {
		w.event = nil
		e.holder = nil
		n.stats.passed.Add(1)
		q.dispatch(e)
	}
	if w.recheck {
		q.passRecheck(w.filter.set)
	}
	if failed {
		n.stats.broadcasts.Add(1)
		q.broadcast()
	}
}

// recheckTick begins a new recheck round of the label set ls and gives
// its longest-waiting idle waiter a recheck turn (none idle: every waiter
// of the set is claiming or about to, and a waiter that joins claims, its
// proof now stale).
func (n *Notifier) recheckTick(project uuid.UUID, set string, ls *labelSet, every time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.queues[project]
	if q == nil || q.sets[set] != ls {
		return // the set's waiters have all left
	}
	ls.round++
	n.stats.rechecks.Add(1)
	q.passRecheck(set)
	ls.timer.Reset(every)
}
