package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// FinishTx marks an open item done or cancelled inside the caller's
// transaction: status, result, finished_at, active_lease_id = NULL. Then it
// decrements unmet_dependencies of the item's dependents and open_children
// of its parent: only those rows, found through indexes, never a scan. It
// does not touch leases (the caller ends the lease first). A lease's
// completion does not call it: its ending statement marks the item done
// itself, then it calls ReleaseFinishedTx.
//
// The item may still have open children (a person added them while it was
// leased); finishing it anyway is allowed, and the children stay open.
//
// Errors: invalid_argument for a status other than done or cancelled or a
// result that is not JSON; not_found when the item is not in the project;
// conflict when it is not open.
func FinishTx(ctx context.Context, tx pgx.Tx, clk clock.Clock, project, id uuid.UUID, status Status, result json.RawMessage) error {
	if status != StatusDone && status != StatusCancelled {
		return wgerr.InvalidField("status", "must be done or cancelled, not %q", status)
	}
	if len(result) > 0 && !json.Valid(result) {
		return wgerr.InvalidField("result", "must be JSON")
	}
	n, err := finishItems(ctx, tx, clk.Now(), project, []uuid.UUID{id}, status, result)
	if err != nil {
		return err
	}
	if n == 0 {
		it, err := getItem(ctx, tx, clk.Now(), project, id)
		if err != nil {
			return err
		}
		return wgerr.New(wgerr.CodeConflict, "item %s is %s, not open", id, it.Status)
	}
	return nil
}

// finishItems marks the still-open items among ids terminal and releases
// their dependents and parents. It returns how many items it finished.
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

// ReleaseFinishedTx is the rest of finishing, for a caller whose own
// statement has just marked items terminal (a completion ends its lease and
// marks the item done in one statement): one prerequisite fewer is open for
// each of their dependents, and one child fewer for each parent, listed once
// per finished child.
func ReleaseFinishedTx(ctx context.Context, tx pgx.Tx, clk clock.Clock, project uuid.UUID, finished, parents []uuid.UUID) error {
	return releaseFinished(ctx, tx, clk.Now(), project, finished, parents)
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
