package lease

import (
	"context"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/startstop"
)

// readyChannel is the channel the items trigger NOTIFYs with the project id
// when an item becomes ready.
const readyChannel = "workgraph_ready"

// Notifier listens for "an item became ready" notifications on one
// dedicated connection (not taken from the pool) and fans them out to
// subscribers per project. It reconnects after a failure and then wakes
// every subscriber, since notifications sent while it was away are lost.
type Notifier struct {
	base startstop.Base
	pool *pgxpool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	subs map[uuid.UUID]map[chan struct{}]struct{}

	listening     chan struct{} // closed once the first LISTEN is active
	listeningOnce sync.Once

	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals NotifierSignals
}

// NotifierSignals are the test signals of a Notifier.
type NotifierSignals struct {
	// Listening is sent each time a LISTEN became active (the first
	// connection and every reconnection).
	Listening startstop.Signal[struct{}]
	// Notified is sent with the project of every notification, after its
	// subscribers were woken.
	Notified startstop.Signal[uuid.UUID]
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

// Subscribe returns a channel that receives a value (coalesced: at most one
// pending) whenever an item of the project may have become ready, and a
// function that ends the subscription.
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
	db.Listen(ctx, n.pool, readyChannel, n.log,
		func() {
			n.listeningOnce.Do(func() { close(n.listening) })
			// Anything sent while no connection listened is lost: let every
			// waiter look again.
			n.signalAll()
			n.TestSignals.Listening.Send(struct{}{})
		},
		func(payload string) {
			project, err := uuid.Parse(payload)
			if err != nil {
				n.log.Warn("lease notifier: unexpected payload", "payload", payload)
				return
			}
			n.signal(project)
			n.TestSignals.Notified.Send(project)
		},
		func() {})
}
