package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Retention bounds.
const (
	// DefaultRetention is how long events are kept unless configured.
	DefaultRetention = 30 * 24 * time.Hour
	// MinRetention is the shortest retention: the table itself refuses to
	// delete events younger than a day.
	MinRetention = 24 * time.Hour
	// retentionBatch is how many events one transaction deletes.
	retentionBatch = 5000
)

// CheckRetention validates a configured retention: 0 (keep forever) or at
// least MinRetention.
func CheckRetention(d time.Duration) error {
	if d < 0 || (d != 0 && d < MinRetention) {
		return wgerr.InvalidField("events-retention", "must be 0 (keep forever) or at least %s, not %s", MinRetention, d)
	}
	return nil
}

// Retention deletes events older than its retention every interval, first
// when it starts: project by project, in transactions of at most a few
// thousand events, oldest first, so it never holds many locks or one long
// transaction (which would hold back every reader's Horizon). It is a
// background service (startstop.Service); any number may run at once
// (they delete disjoint or already deleted rows).
type Retention struct {
	base     startstop.Base
	exec     db.Executor
	clock    clock.Clock
	keep     time.Duration
	interval time.Duration
	log      *slog.Logger
	observe  func(deleted int64)
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals RetentionSignals
}

// Observe has f told how many events every run deleted (also those of a
// run that failed part way). Call it before Start.
func (r *Retention) Observe(f func(deleted int64)) { r.observe = f }

// RetentionSignals are the test signals of a Retention.
type RetentionSignals struct {
	// Deleted is sent after every run with the number of events deleted
	// (0 also when the run failed).
	Deleted startstop.Signal[int64]
}

// NewRetention returns the retention service of the events on exec that
// keeps keep (at least MinRetention; 0 never deletes) and runs every
// interval (0: one hour). A nil clock is the database's.
func NewRetention(exec db.Executor, clk clock.Clock, keep, interval time.Duration, log *slog.Logger) *Retention {
	if clk == nil {
		clk = clock.Database{}
	}
	if interval <= 0 {
		interval = time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	return &Retention{exec: exec, clock: clk, keep: keep, interval: interval, log: log}
}

// Start runs the service until Stop or ctx ends. With a retention of 0 it
// does nothing.
func (r *Retention) Start(ctx context.Context) {
	r.base.Run(ctx, func(ctx context.Context) {
		if r.keep == 0 {
			<-ctx.Done()
			return
		}
		startstop.Every(ctx, r.interval, true, func(ctx context.Context) { r.RunOnce(ctx) })
	})
}

// Stop ends the service and waits for a run in progress.
func (r *Retention) Stop() { r.base.Stop() }

// RunOnce deletes the events older than the retention now and returns how
// many it deleted.
func (r *Retention) RunOnce(ctx context.Context) int64 {
	n, err := r.deleteOld(ctx)
	switch {
	case err == nil || ctx.Err() != nil:
	case wgerr.RetryLater(wgerr.CodeOf(err)):
		// The database is away (a restart, a failover): the next run
		// catches up.
		r.log.Warn("deleting old events", "err", err)
	default:
		r.log.Error("deleting old events", "err", err)
	}
	if r.observe != nil {
		r.observe(n)
	}
	r.TestSignals.Deleted.Send(n)
	return n
}

func (r *Retention) deleteOld(ctx context.Context) (int64, error) {
	if r.keep < MinRetention {
		return 0, nil
	}
	keepMs := r.keep.Milliseconds()
	projects, err := q.ProjectsWithOldEvents(ctx, r.exec, dbq.ProjectsWithOldEventsParams{Now: r.clock.Now(), KeepMs: keepMs})
	if err != nil {
		return 0, db.Translate(err)
	}
	var total int64
	for _, p := range projects {
		n, err := r.deleteProject(ctx, p, keepMs)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteProject deletes one project's old events, a batch per transaction.
func (r *Retention) deleteProject(ctx context.Context, project uuid.UUID, keepMs int64) (int64, error) {
	var total int64
	for {
		var n int64
		err := db.InTx(ctx, r.exec, func(tx pgx.Tx) error {
			if err := q.EnableEventDeletion(ctx, tx); err != nil {
				return err
			}
			var err error
			n, err = q.DeleteOldEvents(ctx, tx, dbq.DeleteOldEventsParams{
				ProjectID: project, Now: r.clock.Now(), KeepMs: keepMs, MaxRows: retentionBatch,
			})
			return err
		})
		total += n
		if err != nil || n < retentionBatch {
			return total, err
		}
	}
}
