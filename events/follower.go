package events

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/startstop"
)

// DefaultFollowInterval is how often a Follower looks at the log's newest
// number while someone waits: the median delay it adds to a stream is half
// of it.
const DefaultFollowInterval = 25 * time.Millisecond

// ErrStopped is returned by Follower.Wait once the follower has stopped
// (the server shuts down): streams end instead of waiting for nothing.
var ErrStopped = errors.New("events: the follower has stopped")

// Follower is the one watcher of the log in a server replica. While
// anyone waits on it (Wait), it reads the newest number taken every
// interval (one cheap statement) and, when it moved, computes the horizon
// and wakes every waiter; with no waiter it sends nothing to the
// database. Waiters then read their own project's events up to the
// horizon. It learns of events from the database alone, so events written
// through any replica wake the waiters of every replica; writers send no
// NOTIFY (a transaction that notifies takes a database-wide lock at
// commit, which would serialise every commit that writes an event).
type Follower struct {
	startstop.Base
	conn     db.DBTX
	interval time.Duration
	log      *slog.Logger
	observer Observer

	mu      sync.Mutex
	waiters int
	horizon int64
	// changed is closed (and replaced) whenever horizon grows.
	changed chan struct{}
	// busy is signalled when the first waiter arrives.
	busy    chan struct{}
	stopped chan struct{}

	// Advanced receives each new horizon; Polled each look at the log
	// (test signals).
	Advanced startstop.Signal[int64]
	Polled   startstop.Signal[struct{}]
}

// NewFollower follows the log on conn (a pool: the follower holds no
// connection between its statements); interval 0 is
// DefaultFollowInterval.
func NewFollower(conn db.DBTX, interval time.Duration, log *slog.Logger) *Follower {
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	if log == nil {
		log = slog.Default()
	}
	return &Follower{conn: conn, interval: interval, log: log,
		changed: make(chan struct{}), busy: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// Start runs the follower until Stop or ctx ends.
func (f *Follower) Start(ctx context.Context) {
	f.mu.Lock()
	select {
	case <-f.stopped:
		f.stopped = make(chan struct{})
	default:
	}
	f.mu.Unlock()
	f.Run(ctx, f.loop)
}

// Stop ends the follower; every Wait returns ErrStopped, now and later.
func (f *Follower) Stop() {
	f.Base.Stop()
	f.mu.Lock()
	select {
	case <-f.stopped:
	default:
		close(f.stopped)
	}
	f.mu.Unlock()
}

// Wait blocks until the follower has seen a horizon above seen and returns
// it, or until ctx ends (ctx's error) or the follower stops (ErrStopped).
// seen is a horizon the caller read up to (Horizon, or an earlier Wait).
func (f *Follower) Wait(ctx context.Context, seen int64) (int64, error) {
	f.mu.Lock()
	f.waiters++
	if f.waiters == 1 {
		select {
		case f.busy <- struct{}{}:
		default:
		}
	}
	defer func() {
		f.mu.Lock()
		f.waiters--
		f.mu.Unlock()
	}()
	for f.horizon <= seen {
		changed, stopped := f.changed, f.stopped
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-stopped:
			return 0, ErrStopped
		case <-changed:
		}
		f.mu.Lock()
	}
	h := f.horizon
	f.mu.Unlock()
	return h, nil
}

func (f *Follower) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiters == 0
}

func (f *Follower) loop(ctx context.Context) {
	t := time.NewTicker(f.interval)
	defer t.Stop()
	var failing bool
	for {
		if f.idle() {
			select {
			case <-ctx.Done():
				return
			case <-f.busy:
			}
		}
		err := f.poll(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			f.log.Warn("events: following the log failed; retrying", "err", err)
			failing = true
		case err == nil && failing:
			f.log.Info("events: following the log again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll looks at the newest number and, when it is above the horizon
// known, computes the new horizon and wakes the waiters.
func (f *Follower) poll(ctx context.Context) error {
	defer f.Polled.Send(struct{}{})
	last, err := q.EventsLastNumber(ctx, f.conn)
	if err != nil {
		return db.Translate(err)
	}
	if f.observer.Polled != nil {
		f.observer.Polled(last)
	}
	f.mu.Lock()
	known := f.horizon
	f.mu.Unlock()
	if last <= known {
		return nil
	}
	h, err := f.observer.horizon(ctx, f.conn)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if h > f.horizon {
		f.horizon = h
		close(f.changed)
		f.changed = make(chan struct{})
	}
	f.mu.Unlock()
	f.Advanced.Send(h)
	return nil
}
