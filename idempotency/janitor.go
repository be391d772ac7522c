package idempotency

import (
	"context"
	"log/slog"
	"time"

	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Janitor deletes expired records every interval, first when it starts. It
// is a background service (startstop.Service): Start it once, Stop it on
// shutdown. Any number of janitors may run at once.
type Janitor struct {
	base     startstop.Base
	store    *Store
	interval time.Duration
	log      *slog.Logger
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals JanitorSignals
}

// JanitorSignals are the test signals of a Janitor.
type JanitorSignals struct {
	// Deleted is sent after every run with the number of records deleted
	// (0 also when the run failed).
	Deleted startstop.Signal[int64]
}

// NewJanitor returns a janitor of store's records (interval 0: one hour).
func NewJanitor(store *Store, interval time.Duration, log *slog.Logger) *Janitor {
	if interval <= 0 {
		interval = time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	return &Janitor{store: store, interval: interval, log: log}
}

// Start runs the janitor until Stop or ctx ends.
func (j *Janitor) Start(ctx context.Context) {
	j.base.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, j.interval, true, func(ctx context.Context) { j.RunOnce(ctx) })
	})
}

// Stop ends the janitor and waits for a run in progress.
func (j *Janitor) Stop() { j.base.Stop() }

// RunOnce deletes the expired records now and returns how many.
func (j *Janitor) RunOnce(ctx context.Context) int64 {
	n, err := j.store.DeleteExpired(ctx)
	switch {
	case err == nil || ctx.Err() != nil:
	case wgerr.RetryLater(wgerr.CodeOf(err)):
		// The database is away (a restart, a failover): the next run
		// catches up.
		j.log.Warn("deleting expired idempotency keys", "err", err)
	default:
		j.log.Error("deleting expired idempotency keys", "err", err)
	}
	j.TestSignals.Deleted.Send(n)
	return n
}

// Holder keeps one request's record locked while the request runs: it
// renews the lock every RenewEvery (a startstop.Service).
type Holder struct {
	base  startstop.Base
	store *Store
	req   Request
	log   *slog.Logger
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals HolderSignals
}

// HolderSignals are the test signals of a Holder.
type HolderSignals struct {
	// Renewed is sent after every renewal, with its error.
	Renewed startstop.Signal[error]
}

// Hold returns the Holder of r's record; Start it when the request begins
// running and Stop it when it returns.
func (s *Store) Hold(r Request, log *slog.Logger) *Holder {
	if log == nil {
		log = slog.Default()
	}
	return &Holder{store: s, req: r, log: log}
}

// Start renews the lock until Stop. The renewals do not end with ctx (a
// handler's context may end before the request finishes); only their
// values are kept.
func (h *Holder) Start(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	h.base.Run(ctx, func(loopCtx context.Context) {
		startstop.Every(loopCtx, RenewEvery, false, func(context.Context) {
			rctx, cancel := context.WithTimeout(ctx, RenewEvery)
			err := h.store.Renew(rctx, h.req)
			cancel()
			if err != nil {
				h.log.WarnContext(rctx, "renewing an idempotency key", "key", h.req.Key, "err", err)
			}
			h.TestSignals.Renewed.Send(err)
		})
	})
}

// Stop ends the renewals and waits for one in progress.
func (h *Holder) Stop() { h.base.Stop() }
