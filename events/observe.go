package events

import (
	"context"
	"time"

	"github.com/workgraph-dev/workgraph/db"
)

// Observer is told what the log's followers and readers see, for the
// server's /metrics (this package knows nothing of it). Nil funcs are
// skipped; both are called from the goroutine that saw the figure.
type Observer struct {
	// Polled is a follower's look at the newest number taken.
	Polled func(last int64)
	// Horizon is how long computing a horizon took (a follower's, or a
	// reader's first read): the wait for the writers below it to settle.
	Horizon func(took time.Duration)
}

// horizon is Horizon, timed for o.
func (o Observer) horizon(ctx context.Context, conn db.DBTX) (int64, error) {
	if o.Horizon == nil {
		return Horizon(ctx, conn)
	}
	start := time.Now()
	h, err := Horizon(ctx, conn)
	if err == nil {
		o.Horizon(time.Since(start))
	}
	return h, err
}

// Observe has o told of every poll and horizon of f and of the readers
// that wait on it. Call it before Start.
func (f *Follower) Observe(o Observer) { f.observer = o }

// observed is the observer of r's reads (its follower's).
func (r *Reader) observed() Observer {
	if r.follower == nil {
		return Observer{}
	}
	return r.follower.observer
}
