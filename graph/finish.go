package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// finishItems marks the still-open items among ids terminal (status,
// result, finished_at, active_lease_id = NULL) and releases their
// dependents and parents: only those rows, found through indexes, never a
// scan. It does not touch leases. It returns how many items it finished.
// (A lease's completion marks its item done in its own ending statement and
// calls ReleaseFinished for the rest.)
func finishItems(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, ids []uuid.UUID, status Status, result json.RawMessage) (int, error) {
	q := dbq.New()
	if len(result) == 0 {
		result = nil
	}
	finished, err := q.FinishItems(ctx, tx, dbq.FinishItemsParams{
		Status: string(status), Result: result, Now: now, ProjectID: project, Ids: ids,
	})
	if err != nil || len(finished) == 0 {
		return 0, err
	}
	done := make([]uuid.UUID, len(finished))
	var parents []uuid.UUID
	for i, f := range finished {
		done[i] = f.ID
		if f.ParentID != nil {
			parents = append(parents, *f.ParentID)
		}
	}
	if err := releaseFinished(ctx, tx, now, project, done, parents); err != nil {
		return 0, err
	}
	return len(finished), nil
}

// Finish marks an open item done with result, decided by a person (not by
// a lease: a person's decision on an uncertain outcome), and releases its
// dependents and parent, in one transaction (s On a caller's transaction to
// compose with it). The item must hold no lease.
//
// An item that waits for a dependency or an open child (added while it
// waited for the decision) cannot be done, as a worker cannot complete it:
// the refusal is blocked, names that work and changes nothing. The check
// is the marking statement's own (FinishItems), on the item's newest row
// version.
//
// Errors: conflict when the item is no longer open; blocked.
func (s *Service) Finish(ctx context.Context, project, id uuid.UUID, result json.RawMessage) (Item, error) {
	var out Item
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		now := s.clock.Now()
		n, err := finishItems(ctx, tx, now, project, []uuid.UUID{id}, StatusDone, result)
		if err != nil {
			return err
		}
		if n == 0 {
			return conflictf("item %s is no longer open", id)
		}
		out, err = getItem(ctx, tx, now, project, id)
		return err
	})
	if db.ItemBlocked(err) {
		// The statement raised and was rolled back (on a caller's
		// transaction, its savepoint), so the item can be read to name
		// the work it waits for.
		it, gerr := s.Item(ctx, project, id)
		if gerr != nil {
			return Item{}, gerr
		}
		return Item{}, blockedFinish(it)
	}
	return out, err
}

// ReleaseFinished is the rest of finishing, for a caller whose own
// statement has just marked items terminal in its transaction (a completion
// ends its lease and marks the item done in one statement; s is On that
// transaction): one prerequisite fewer is open for each of their
// dependents, and one child fewer for each parent, listed once per finished
// child.
func (s *Service) ReleaseFinished(ctx context.Context, project uuid.UUID, finished, parents []uuid.UUID) error {
	// A step of the completion's transaction when it runs On one (db.Join:
	// no savepoint on the completion's path).
	return db.Join(ctx, s.exec, func(tx pgx.Tx) error {
		return releaseFinished(ctx, tx, s.clock.Now(), project, finished, parents)
	})
}

func releaseFinished(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, finished, parents []uuid.UUID) error {
	q := dbq.New()
	if _, err := q.ReleaseDependents(ctx, tx, dbq.ReleaseDependentsParams{Now: now, ProjectID: project, Ids: finished}); err != nil {
		return err
	}
	if len(parents) > 0 {
		if _, err := q.ReleaseParents(ctx, tx, dbq.ReleaseParentsParams{Now: now, ProjectID: project, ParentIds: parents}); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseCompletedBatch is ReleaseCompleted for a batch completion sent
// as one pipelined batch (on q): queued after the statement that ends the
// batch's leases, it releases the items of those of leases that the
// batch's own transaction completed (a replayed entry's lease, completed
// before, releases nothing again).
func (s *Service) ReleaseCompletedBatch(ctx context.Context, q db.DBTX, project uuid.UUID, leases []uuid.UUID) error {
	_, err := dbq.New().ReleaseCompletedLeases(ctx, q, dbq.ReleaseCompletedLeasesParams{
		Now: s.clock.Now(), ProjectID: project, LeaseIds: leases,
	})
	return err
}

// ReleaseCompleted is ReleaseFinished for a completion sent as one
// pipelined batch (db.Pipeline, on q): the statement queued after the
// lease's ending statement, which aborts the batch when its fence does not
// hold. It finds the item and its parent from the lease, since the batch
// is sent before the ending statement answers.
func (s *Service) ReleaseCompleted(ctx context.Context, q db.DBTX, project, lease uuid.UUID) error {
	_, err := dbq.New().ReleaseCompletedLease(ctx, q, dbq.ReleaseCompletedLeaseParams{
		Now: s.clock.Now(), ProjectID: project, LeaseID: lease,
	})
	return err
}
