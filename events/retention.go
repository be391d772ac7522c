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
	// RetentionBatch is how many rows one transaction of a retention
	// deletes.
	RetentionBatch = 5000
)

// CheckRetention validates a configured retention: 0 (keep forever) or at
// least MinRetention.
func CheckRetention(d time.Duration) error {
	if d < 0 || (d != 0 && d < MinRetention) {
		return wgerr.InvalidField("events-retention", "must be 0 (keep forever) or at least %s, not %s", MinRetention, d)
	}
	return nil
}

// Retention runs a deletion of old rows every interval, first when it
// starts, and keeps no state of its own: the deletion is given (Prune), so
// the events' retention and other tables' (webhook deliveries, answer
// links) share the loop, its logging and its test signals. Deletions work
// project by project, in transactions of at most a few thousand rows,
// oldest first, so a run never holds many locks or one long transaction
// (which would hold back every reader's Horizon). It is a background
// service (startstop.Service); any number may run at once (they delete
// disjoint or already deleted rows).
type Retention struct {
	base     startstop.Base
	clock    clock.Clock
	keep     time.Duration
	interval time.Duration
	log      *slog.Logger
	what     string
	prune    Prune
	observe  func(deleted int64)
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals RetentionSignals
}

// Prune deletes what is older than keep before now (the clock's time, nil
// for the database's) and returns how many rows it deleted, also when it
// fails part way.
type Prune func(ctx context.Context, now *time.Time, keepMs int64) (int64, error)

// Observe has f told how many rows every run deleted (also those of a run
// that failed part way). Call it before Start.
func (r *Retention) Observe(f func(deleted int64)) { r.observe = f }

// RetentionSignals are the test signals of a Retention.
type RetentionSignals struct {
	// Deleted is sent after every run with the number of rows deleted (0
	// also when the run failed).
	Deleted startstop.Signal[int64]
}

// NewRetention returns the retention service of the events on exec that
// keeps keep (at least MinRetention; 0 never deletes) and runs every
// interval (0: one hour). A nil clock is the database's.
func NewRetention(exec db.Executor, clk clock.Clock, keep, interval time.Duration, log *slog.Logger) *Retention {
	return NewPruner("old events", clk, keep, interval, log, func(ctx context.Context, now *time.Time, keepMs int64) (int64, error) {
		return deleteOldEvents(ctx, exec, now, keepMs)
	})
}

// NewPruner returns a retention service that runs prune every interval (0:
// one hour) with a retention of keep (at least MinRetention; 0 never
// deletes); what names the rows in its log lines. A nil clock is the
// database's.
func NewPruner(what string, clk clock.Clock, keep, interval time.Duration, log *slog.Logger, prune Prune) *Retention {
	if clk == nil {
		clk = clock.Database{}
	}
	if interval <= 0 {
		interval = time.Hour
	}
	if log == nil {
		log = slog.Default()
	}
	return &Retention{clock: clk, keep: keep, interval: interval, log: log, what: what, prune: prune}
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

// RunOnce deletes the rows older than the retention now and returns how
// many it deleted.
func (r *Retention) RunOnce(ctx context.Context) int64 {
	var n int64
	var err error
	if r.keep >= MinRetention {
		n, err = r.prune(ctx, r.clock.Now(), r.keep.Milliseconds())
	}
	switch {
	case err == nil || ctx.Err() != nil:
	case wgerr.RetryLater(wgerr.CodeOf(err)):
		// The database is away (a restart, a failover): the next run
		// catches up.
		r.log.Warn("deleting "+r.what, "err", err)
	default:
		r.log.Error("deleting "+r.what, "err", err)
	}
	if r.observe != nil {
		r.observe(n)
	}
	r.TestSignals.Deleted.Send(n)
	return n
}

// PerProject runs del for each project in turn and returns how many rows
// they deleted in all; it stops at the first error.
func PerProject(projects []uuid.UUID, del func(project uuid.UUID) (int64, error)) (int64, error) {
	var total int64
	for _, p := range projects {
		n, err := del(p)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// InBatches runs batch, which deletes at most RetentionBatch rows, until it
// deletes fewer, and returns how many rows it deleted in all (its errors
// translated).
func InBatches(batch func() (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := batch()
		total += n
		if err != nil {
			return total, db.Translate(err)
		}
		if n < RetentionBatch {
			return total, nil
		}
	}
}

func deleteOldEvents(ctx context.Context, exec db.Executor, now *time.Time, keepMs int64) (int64, error) {
	projects, err := q.ProjectsWithOldEvents(ctx, exec, dbq.ProjectsWithOldEventsParams{Now: now, KeepMs: keepMs})
	if err != nil {
		return 0, db.Translate(err)
	}
	return PerProject(projects, func(project uuid.UUID) (int64, error) {
		return InBatches(func() (int64, error) {
			var n int64
			err := db.InTx(ctx, exec, func(tx pgx.Tx) error {
				if err := q.EnableEventDeletion(ctx, tx); err != nil {
					return err
				}
				var err error
				n, err = q.DeleteOldEvents(ctx, tx, dbq.DeleteOldEventsParams{
					ProjectID: project, Now: now, KeepMs: keepMs, MaxRows: RetentionBatch,
				})
				return err
			})
			return n, err
		})
	})
}
