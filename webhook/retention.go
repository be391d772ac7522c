package webhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// retentionBatch is how many delivery records one transaction of the
// retention deletes.
const retentionBatch = 5000

// CheckRetention validates a configured retention of delivery records: 0
// (keep forever) or at least events.MinRetention (the table refuses to
// delete a record finished less than a day ago).
func CheckRetention(d time.Duration) error {
	if d < 0 || (d != 0 && d < events.MinRetention) {
		return wgerr.InvalidField("webhooks-delivery-retention", "must be 0 (keep forever) or at least %s, not %s", events.MinRetention, d)
	}
	return nil
}

// Retention deletes the records of finished deliveries (delivered or
// failed) older than its retention, with their attempts, and the answer
// links that expired longer than the retention ago, every interval, first
// when it starts: project by project, a few thousand records a
// transaction, oldest first. Pending deliveries and links that can still
// be used are never deleted (a spent link's answer stays on its request,
// recorded as given through a link). It is a background service
// (startstop.Service); any number may run at once.
type Retention struct {
	base     startstop.Base
	exec     db.Executor
	clock    clock.Clock
	keep     time.Duration
	interval time.Duration
	log      *slog.Logger
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals RetentionSignals
}

// RetentionSignals are the test signals of a Retention.
type RetentionSignals struct {
	// Deleted is sent after every run with the number of records
	// (deliveries and answer links) deleted (0 also when the run failed).
	Deleted startstop.Signal[int64]
}

// NewRetention returns the retention service of the delivery records on
// exec that keeps keep (at least events.MinRetention; 0 never deletes)
// and runs every interval (0: one hour). A nil clock is the database's.
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

// RunOnce deletes the delivery records and the answer links older than
// the retention now and returns how many it deleted.
func (r *Retention) RunOnce(ctx context.Context) int64 {
	n, err := r.deleteOld(ctx)
	if err == nil {
		var links int64
		links, err = r.deleteOldLinks(ctx)
		n += links
	}
	switch {
	case err == nil || ctx.Err() != nil:
	case wgerr.RetryLater(wgerr.CodeOf(err)):
		r.log.Warn("deleting old webhook deliveries", "err", err)
	default:
		r.log.Error("deleting old webhook deliveries", "err", err)
	}
	r.TestSignals.Deleted.Send(n)
	return n
}

func (r *Retention) deleteOld(ctx context.Context) (int64, error) {
	if r.keep < events.MinRetention {
		return 0, nil
	}
	keepMs := r.keep.Milliseconds()
	projects, err := q.ProjectsWithOldDeliveries(ctx, r.exec, dbq.ProjectsWithOldDeliveriesParams{Now: r.clock.Now(), KeepMs: keepMs})
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

// deleteProject deletes one project's old records, a batch per
// transaction.
func (r *Retention) deleteProject(ctx context.Context, project uuid.UUID, keepMs int64) (int64, error) {
	return inBatches(func() (int64, error) {
		var n int64
		err := db.InTx(ctx, r.exec, func(tx pgx.Tx) error {
			if err := q.EnableDeliveryDeletion(ctx, tx); err != nil {
				return err
			}
			var err error
			n, err = q.DeleteOldDeliveries(ctx, tx, dbq.DeleteOldDeliveriesParams{
				ProjectID: project, Now: r.clock.Now(), KeepMs: keepMs, MaxRows: retentionBatch,
			})
			return err
		})
		return n, err
	})
}

// deleteOldLinks deletes the answer links that expired longer than the
// retention ago, project by project, a batch per statement.
func (r *Retention) deleteOldLinks(ctx context.Context) (int64, error) {
	if r.keep < events.MinRetention {
		return 0, nil
	}
	keepMs := r.keep.Milliseconds()
	projects, err := q.ProjectsWithOldAnswerLinks(ctx, r.exec, dbq.ProjectsWithOldAnswerLinksParams{Now: r.clock.Now(), KeepMs: keepMs})
	if err != nil {
		return 0, db.Translate(err)
	}
	var total int64
	for _, p := range projects {
		n, err := inBatches(func() (int64, error) {
			return q.DeleteOldAnswerLinks(ctx, r.exec, dbq.DeleteOldAnswerLinksParams{
				ProjectID: p, Now: r.clock.Now(), KeepMs: keepMs, MaxRows: retentionBatch,
			})
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// inBatches runs deleteBatch until it deletes fewer than retentionBatch
// records, and returns how many it deleted in all.
func inBatches(deleteBatch func() (int64, error)) (int64, error) {
	var total int64
	for {
		n, err := deleteBatch()
		total += n
		if err != nil {
			return total, db.Translate(err)
		}
		if n < retentionBatch {
			return total, nil
		}
	}
}
