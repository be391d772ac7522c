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
	"github.com/workgraph-dev/workgraph/wgerr"
)

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
// recorded as given through a link). It is the events' retention loop
// (events.Retention) with these deletions; any number may run at once.
type Retention = events.Retention

// RetentionSignals are the test signals of a Retention: Deleted is sent
// after every run with the number of records (deliveries and answer links)
// deleted.
type RetentionSignals = events.RetentionSignals

// NewRetention returns the retention service of the delivery records and
// answer links on exec that keeps keep (at least events.MinRetention; 0
// never deletes) and runs every interval (0: one hour). A nil clock is the
// database's.
func NewRetention(exec db.Executor, clk clock.Clock, keep, interval time.Duration, log *slog.Logger) *Retention {
	return events.NewPruner("old webhook deliveries and answer links", clk, keep, interval, log,
		func(ctx context.Context, now *time.Time, keepMs int64) (int64, error) {
			n, err := deleteOldDeliveries(ctx, exec, now, keepMs)
			if err != nil {
				return n, err
			}
			links, err := deleteOldLinks(ctx, exec, now, keepMs)
			return n + links, err
		})
}

func deleteOldDeliveries(ctx context.Context, exec db.Executor, now *time.Time, keepMs int64) (int64, error) {
	projects, err := q.ProjectsWithOldDeliveries(ctx, exec, dbq.ProjectsWithOldDeliveriesParams{Now: now, KeepMs: keepMs})
	if err != nil {
		return 0, db.Translate(err)
	}
	return events.PerProject(projects, func(project uuid.UUID) (int64, error) {
		return events.InBatches(func() (int64, error) {
			var n int64
			err := db.InTx(ctx, exec, func(tx pgx.Tx) error {
				if err := q.EnableDeliveryDeletion(ctx, tx); err != nil {
					return err
				}
				var err error
				n, err = q.DeleteOldDeliveries(ctx, tx, dbq.DeleteOldDeliveriesParams{
					ProjectID: project, Now: now, KeepMs: keepMs, MaxRows: events.RetentionBatch,
				})
				return err
			})
			return n, err
		})
	})
}

// deleteOldLinks deletes the answer links that expired longer than the
// retention ago, a batch per statement.
func deleteOldLinks(ctx context.Context, exec db.Executor, now *time.Time, keepMs int64) (int64, error) {
	projects, err := q.ProjectsWithOldAnswerLinks(ctx, exec, dbq.ProjectsWithOldAnswerLinksParams{Now: now, KeepMs: keepMs})
	if err != nil {
		return 0, db.Translate(err)
	}
	return events.PerProject(projects, func(project uuid.UUID) (int64, error) {
		return events.InBatches(func() (int64, error) {
			return q.DeleteOldAnswerLinks(ctx, exec, dbq.DeleteOldAnswerLinksParams{
				ProjectID: project, Now: now, KeepMs: keepMs, MaxRows: events.RetentionBatch,
			})
		})
	})
}
