package lease

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/startstop"
)

// readyChannel is the channel the items trigger NOTIFYs on when an item
// becomes ready, naming the project and the item (migration 00030).
const readyChannel = "workgraph_ready"

// Notifier listens for "an item became ready" notifications on one
// dedicated connection (not taken from the pool). It gives each
// notification to one waiting claim of the project whose filter takes the
// item (ClaimWait; the rules, and why no wake-up is lost, are in wake.go),
// and to every subscriber of the project (Subscribe). It reconnects after
// a failure and then wakes every waiter and subscriber, since
// notifications sent while it was away are lost.
type Notifier struct {
	base startstop.Base
	pool *pgxpool.Pool
	log  *slog.Logger

	mu     sync.Mutex
	subs   map[uuid.UUID]map[chan struct{}]struct{}
	queues map[uuid.UUID]*waitQueue
	// seq numbers the notifications (and broadcasts) received.
	seq   uint64
	stats waitCounters

	listening     chan struct{} // closed once the first LISTEN is active
	listeningOnce sync.Once
	draining      chan struct{} // closed by Drain
	drainOnce     sync.Once

	// life is the context of the listener's run (Start to Stop; nil
	// before Start), on which the notifier's own reads of time gates run
	// (due.go); bg counts those in progress, which Stop waits for.
	life context.Context
	bg   sync.WaitGroup

	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals NotifierSignals
}

// NotifierSignals are the test signals of a Notifier.
type NotifierSignals struct {
	// Listening is sent each time a LISTEN became active (the first
	// connection and every reconnection).
	Listening startstop.Signal[struct{}]
	// Notified is sent with the project of every notification, after its
	// subscribers and the waiter it was given were woken.
	Notified startstop.Signal[uuid.UUID]
	// Idle is sent with the project each time a waiting claim found
	// nothing and waits for a turn.
	Idle startstop.Signal[uuid.UUID]
	// Due is sent with the project each time the items due at a time
	// gate's instant became events (due.go).
	Due startstop.Signal[uuid.UUID]
	// Probed is sent with the project each time a read of its next time
	// gates ended, failed or was left out (due.go).
	Probed startstop.Signal[uuid.UUID]
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
		queues:    map[uuid.UUID]*waitQueue{},
		listening: make(chan struct{}),
		draining:  make(chan struct{}),
	}
}

// Start begins listening in the background until ctx ends or Stop.
func (n *Notifier) Start(ctx context.Context) { n.base.Run(ctx, n.run) }

// Stop stops listening and waits for the listener and the notifier's own
// reads of time gates to finish; a time gate's instant after Stop still
// wakes a waiter, but reads nothing.
func (n *Notifier) Stop() {
	n.base.Stop()
	// No read begins from now on (backgroundLocked); those begun hold bg.
	n.mu.Lock()
	n.life = nil
	n.mu.Unlock()
	n.bg.Wait()
}

// backgroundLocked returns the context for a read the notifier makes on
// its own, and false once it is stopped (or before Start): then it must
// not read. When true, the caller calls n.bg.Done once the read ended.
// The caller holds n.mu.
func (n *Notifier) backgroundLocked() (context.Context, bool) {
	if n.life == nil || n.life.Err() != nil {
		return nil, false
	}
	n.bg.Add(1)
	return n.life, true
}

// Drain ends the wait of every waiting claim, now and later, as if its
// wait_seconds had passed (ErrNothingReady): a server calls it when it
// begins to shut down, so its long polls answer at once (their workers
// claim again, from a replica still serving) instead of holding the exit
// until the grace period ends.
func (n *Notifier) Drain() { n.drainOnce.Do(func() { close(n.draining) }) }

// Listening is closed once the notifier's first LISTEN is active (tests
// wait on it before making an item ready).
func (n *Notifier) Listening() <-chan struct{} { return n.listening }

// Subscribe returns a channel that receives a value (coalesced: at most one
// pending) whenever an item of the project may have become ready (every
// notification of the project, unlike a waiting claim), and a function
// that ends the subscription.
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

func (n *Notifier) signal(project uuid.UUID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs[project] {
		wake(ch)
	}
}

func (n *Notifier) signalAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, chans := range n.subs {
		for ch := range chans {
			wake(ch)
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
	n.mu.Lock()
	n.life = ctx
	n.mu.Unlock()
	db.Listen(ctx, n.pool, readyChannel, n.log,
		func() {
			n.listeningOnce.Do(func() { close(n.listening) })
			// Anything sent while no connection listened is lost: let every
			// waiter look again.
			n.signalAll()
			n.noteAll()
			n.TestSignals.Listening.Send(struct{}{})
		},
		func(payload string) {
			r, err := parseReady(payload)
			if err != nil {
				n.log.Warn("lease notifier: unexpected payload", "payload", payload)
				return
			}
			n.signal(r.project)
			n.note(r)
			n.TestSignals.Notified.Send(r.project)
		},
		func() {})
}

// WaitStats are a notifier's counts since it was made: how many claim
// transactions its waiting claims ran and how many of them were granted.
// Claims per grant is the long poll's cost; a wait's first claim, made
// before it waits unless it was Skipped, is one of Claims.
type WaitStats struct {
	// Waits is how many waiting claims (ClaimWait) began; Skipped how
	// many of them waited without a first claim (see join).
	Waits, Skipped int64
	// Claims is the claim transactions they ran; Grants those that took an
	// item.
	Claims, Grants int64
	// Passed counts wake-ups handed on by a waiter that left without
	// using them; Broadcasts the times every waiter of a project was woken
	// (reconnection, a payload without the item, too many pending, a
	// claim's error); Rechecks the periodic rechecks run.
	Passed, Broadcasts, Rechecks int64
	// Probes counts the reads of a project's next time gates (one each
	// time a waiting claim found nothing, and after each due wake-up);
	// DueWakes the instants at which the items due became events.
	Probes, DueWakes int64
}

type waitCounters struct {
	waits, skipped, claims, grants, passed, broadcasts, rechecks, probes, dueWakes atomic.Int64
}

// Stats returns the notifier's counts.
func (n *Notifier) Stats() WaitStats {
	c := &n.stats
	return WaitStats{
		Waits: c.waits.Load(), Skipped: c.skipped.Load(), Claims: c.claims.Load(), Grants: c.grants.Load(),
		Passed: c.passed.Load(), Broadcasts: c.broadcasts.Load(), Rechecks: c.rechecks.Load(),
		Probes: c.probes.Load(), DueWakes: c.dueWakes.Load(),
	}
}
