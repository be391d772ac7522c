package lease

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Complete ends the lease as completed with the result and marks its item
// done, updating the item's dependents and parent, in one transaction.
//
// A repeat of a committed completion of the same lease and epoch with the
// same result (JSON equality) is acknowledged with Replayed; a different
// result is refused as conflicting_result, the first result stands and the
// refused one is kept as an observation of the lease.
//
// Errors: invalid_argument (epoch, result); not_found; lease_lost;
// conflicting_result.
func (s *Service) Complete(ctx context.Context, project uuid.UUID, f Fence, result json.RawMessage, workerTime *time.Time) (Completion, error) {
	if err := checkFence(f); err != nil {
		return Completion{}, err
	}
	result, err := optionalJSON("result", result)
	if err != nil {
		return Completion{}, err
	}
	var out Completion
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, e, err := s.endLease(ctx, tx, project, f, ending{
			outcome: OutcomeCompleted, result: result, workerTime: workerTime, finish: true,
		})
		if err != nil {
			return err
		}
		var parents []uuid.UUID
		if e.parent != nil {
			parents = append(parents, *e.parent)
		}
		if err := s.graphOn(tx).ReleaseFinished(ctx, project, []uuid.UUID{l.ItemID}, parents); err != nil {
			return err
		}
		// Releasing dependents and parent writes other rows: the item is as
		// the ending statement left it.
		out = Completion{Lease: l, Item: graph.FinishedItem(e.item)}
		return nil
	})
	if errors.Is(err, errFenced) {
		return s.repeatedCompletion(ctx, project, f, result, workerTime)
	}
	return out, err
}

// repeatedCompletion answers a completion whose fence did not match: a
// replay, a conflicting result, or a stale call.
func (s *Service) repeatedCompletion(ctx context.Context, project uuid.UUID, f Fence, result json.RawMessage, workerTime *time.Time) (Completion, error) {
	var out Completion
	var answer error
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, err := s.getLease(ctx, tx, project, f.LeaseID)
		if err != nil {
			return err
		}
		if l.Epoch != f.Epoch || l.Outcome == nil || *l.Outcome != OutcomeCompleted {
			answer = lostError(l, f, s.clock.Now())
			return s.recordRefusal(ctx, tx, project, f, "stale_call", opComplete, workerTime,
				mustJSON(map[string]any{"result": result}))
		}
		same, err := dbq.New().SameResult(ctx, tx, dbq.SameResultParams{ProjectID: project, LeaseID: f.LeaseID, Result: result})
		if err != nil {
			return err
		}
		if !same {
			answer = &wgerr.Error{
				Code:    wgerr.CodeConflictingResult,
				Message: "lease " + l.ID.String() + " was already completed with a different result; the first result stands",
				Details: map[string]any{"lease_id": l.ID, "epoch": l.Epoch},
			}
			return s.recordRefusal(ctx, tx, project, f, "conflicting_result", opComplete, workerTime,
				mustJSON(map[string]any{"result": result}))
		}
		item, err := s.graphOn(tx).Item(ctx, project, l.ItemID)
		out = Completion{Lease: l, Item: item, Replayed: true}
		return err
	})
	if err != nil {
		return Completion{}, err
	}
	if answer != nil {
		return Completion{}, answer
	}
	return out, nil
}
