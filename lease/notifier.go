package lease

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/startstop"
)

// readyChannel is the channel the items trigger NOTIFYs on when an item is
// ready at commit; the payload is "<project_id> <item_id>" (a bare
// project id, as sent before migration 00023, means "some items").
const readyChannel = "workgraph_ready"

// Notifier listens for "an item became ready" notifications on one
// dedicated connection (not taken from the pool) and turns each into one
// wake-up of one waiting claimer of the project (ClaimWait), the one that
// has waited longest, so a ready item costs one claim transaction per
// replica instead of one per waiter. Observers (Subscribe) are woken by
// every notification of their project.
//
// A wake-up is never lost while the claimer holding it waits here: a woken
// claimer that gets nothing, while an item it cannot take (labels,
// continuity reservation) is still free, hands the wake-up to the longest
// waiting claimer that can take that item (see ClaimWait); a claimer that
// stops waiting with a wake-up it did not use hands it on; a notification
// that finds every claimer busy is kept for the next one to wait. After a
// reconnection every waiter and observer is woken, since notifications
// sent while no connection listened are lost.
type Notifier struct {
	base startstop.Base
	pool *pgxpool.Pool
	log  *slog.Logger

	mu       sync.Mutex
	subs     map[uuid.UUID]map[chan struct{}]struct{}
	projects map[uuid.UUID]*waitQueue

	listening     chan struct{} // closed once the first LISTEN is active
	listeningOnce sync.Once

	waits, attempts, grants atomic.Int64

	// BroadcastWakeups, set before Start, wakes every waiting claimer of
	// the project on each notification, as workgraph did before wake-ups
	// went to one claimer, and makes each recheck its own: it is kept for
	// the benchmark's before-and-after figure only.
	BroadcastWakeups bool

	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals NotifierSignals
}

// NotifierSignals are the test signals of a Notifier.
type NotifierSignals struct {
	// Listening is sent each time a LISTEN became active (the first
	// connection and every reconnection).
	Listening startstop.Signal[struct{}]
	// Notified is sent with the project of every notification, after its
	// waiter and observers were woken.
	Notified startstop.Signal[uuid.UUID]
}

// WaitStats counts the waiting claims (ClaimWait with this notifier),
// their claim transactions and the leases they were granted;
// Attempts/Grants is the cost of a grant to a long poll, of which
// Waits/Grants are the first claims each waiting claim makes before it
// waits.
type WaitStats struct {
	Waits    int64
	Attempts int64
	Grants   int64
}

// NewNotifier returns a Notifier that connects with pool's configuration.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{
		pool:      pool,
		log:       log,
		subs:      map[uuid.UUID]map[chan struct{}]struct{}{},
		projects:  map[uuid.UUID]*waitQueue{},
		listening: make(chan struct{}),
	}
}

// Start begins listening in the background until ctx ends or Stop.
func (n *Notifier) Start(ctx context.Context) { n.base.Run(ctx, n.run) }

// Stop stops listening and waits for the listener to finish.
func (n *Notifier) Stop() { n.base.Stop() }

// Listening is closed once the notifier's first LISTEN is active (tests
// wait on it before making an item ready).
func (n *Notifier) Listening() <-chan struct{} { return n.listening }

// Stats returns the counts of waiting claims since the notifier was made.
func (n *Notifier) Stats() WaitStats {
	return WaitStats{Waits: n.waits.Load(), Attempts: n.attempts.Load(), Grants: n.grants.Load()}
}

// Subscribe returns a channel that receives a value (coalesced: at most one
// pending) whenever an item of the project may have become ready, and a
// function that ends the subscription. An observer does not take a
// waiting claimer's wake-up.
func (n *Notifier) Subscribe(project uuid.UUID) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs[project] == nil {
		n.subs[project] = map[chan struct{}]struct{}{}
	}
	n.subs[project][ch] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs[project], ch)
			if len(n.subs[project]) == 0 {
				delete(n.subs, project)
			}
			n.mu.Unlock()
		})
	}
}

// observe wakes the observers of the project; n.mu is held.
func (n *Notifier) observe(project uuid.UUID) {
	for ch := range n.subs[project] {
		wake(ch)
	}
}

// notified hands one wake-up for an item of the project to its longest
// waiting idle claimer, or keeps it for the next claimer to wait.
func (n *Notifier) notified(project uuid.UUID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.observe(project)
	q := n.projects[project]
	switch {
	case q == nil:
	case n.BroadcastWakeups:
		for e := q.waiters.Front(); e != nil; e = e.Next() {
			e.Value.(*waiter).give()
		}
	default:
		q.deliver(nil, nil)
	}
}

// signalAll wakes every observer and every waiting claimer (after a
// reconnection, or a notification that names no item).
func (n *Notifier) signalAll(only *uuid.UUID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for project := range n.subs {
		if only == nil || *only == project {
			n.observe(project)
		}
	}
	for project, q := range n.projects {
		if only != nil && *only != project {
			continue
		}
		for e := q.waiters.Front(); e != nil; e = e.Next() {
			e.Value.(*waiter).give()
		}
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (n *Notifier) run(ctx context.Context) {
	db.Listen(ctx, n.pool, readyChannel, n.log,
		func() {
			n.listeningOnce.Do(func() { close(n.listening) })
			// Anything sent while no connection listened is lost: let every
			// waiter look again.
			n.signalAll(nil)
			n.TestSignals.Listening.Send(struct{}{})
		},
		func(payload string) {
			projectText, itemText, named := strings.Cut(payload, " ")
			project, err := uuid.Parse(projectText)
			if err == nil && named {
				_, err = uuid.Parse(itemText)
			}
			if err != nil {
				n.log.Warn("lease notifier: unexpected payload", "payload", payload)
				return
			}
			if named {
				n.notified(project)
			} else {
				n.signalAll(&project)
			}
			n.TestSignals.Notified.Send(project)
		},
		func() {})
}
