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
// An item that gained unfinished work while it was leased (a dependency
// on an open item, an open child) cannot be completed: the completion is
// refused as blocked, naming that work, and changes nothing; the lease
// stays live, so the worker may heartbeat, complete once the work is
// done, release or fail it. The check is the ending statement's own
// (EndLease), on the item's newest row version, so a dependency or child
// committed while the completion waited for the item's row is seen.
//
// Errors: invalid_argument (epoch, result); not_found; lease_lost;
// conflicting_result; blocked.
func (s *Service) Complete(ctx context.Context, project uuid.UUID, f Fence, result json.RawMessage, workerTime *time.Time) (Completion, error) {
	return s.CompleteWithUsage(ctx, project, f, result, workerTime, Usage{})
}

// CompleteWithUsage is Complete with the worker's final usage report
// (monotonic, see Usage), charged to its worker and to the budgets over
// the item; a budget it spends gets its budget_exhausted request.
//
// Errors: those of Complete; invalid_argument (usage).
func (s *Service) CompleteWithUsage(ctx context.Context, project uuid.UUID, f Fence, result json.RawMessage, workerTime *time.Time, usage Usage) (Completion, error) {
	if err := checkFence(f); err != nil {
		return Completion{}, err
	}
	if err := usage.Check("usage"); err != nil {
		return Completion{}, err
	}
	result, err := optionalJSON("result", result)
	if err != nil {
		return Completion{}, err
	}
	var out Completion
	if b, ok := s.pipelined(ctx); ok && usage.IsZero() {
		out, err = s.completePipelined(ctx, b, project, f, result, workerTime)
		switch {
		case errors.Is(err, errFenced):
			return s.repeatedCompletion(ctx, project, f, result, workerTime)
		case errors.Is(err, errBlocked):
			return Completion{}, s.blockedError(ctx, project, f)
		}
		return out, err
	}
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, e, err := s.endLease(ctx, tx, project, f, ending{
			outcome: OutcomeCompleted, result: result, workerTime: workerTime, finish: true, usage: usage,
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
		if !usage.IsZero() {
			for _, root := range l.BudgetRoots {
				if err := s.openBudgetRequest(ctx, tx, project, root); err != nil {
					return err
				}
			}
		}
		// Releasing dependents and parent writes other rows: the item is as
		// the ending statement left it.
		out = Completion{Lease: l, Item: graph.FinishedItem(e.item)}
		return nil
	})
	switch {
	case errors.Is(err, errFenced):
		return s.repeatedCompletion(ctx, project, f, result, workerTime)
	case errors.Is(err, errBlocked):
		return Completion{}, s.blockedError(ctx, project, f)
	}
	return out, err
}

// completePipelined is a completion in one round trip: the ending
// statement and the release of the item's dependents and parent sent as
// one batch (db.Pipeline), one implicit transaction. The ending statement
// raises when the fence does not hold, so the release runs only after it
// ended the lease, and in a statement of its own, whose snapshot is taken
// once the ending statement holds the item's row (ADR 0007: a dependency
// committed while it waited is counted). Without usage to charge nor a
// before-commit hook, nothing else runs in the transaction.
func (s *Service) completePipelined(ctx context.Context, b db.Batcher, project uuid.UUID, f Fence, result json.RawMessage, workerTime *time.Time) (Completion, error) {
	var out Completion
	err := db.Pipeline(ctx, b, func(q db.DBTX) error {
		l, e, err := s.endLease(ctx, q, project, f, ending{
			outcome: OutcomeCompleted, result: result, workerTime: workerTime, finish: true, abortIfLost: true,
		})
		out = Completion{Lease: l, Item: graph.FinishedItem(e.item)}
		return err
	}, func(q db.DBTX) error {
		return s.graphOn(s.exec).ReleaseCompleted(ctx, q, project, f.LeaseID)
	})
	if err != nil {
		return Completion{}, err
	}
	return out, nil
}

// pipelined returns the pool to send a step's statements as one batch on,
// when the step may run as one (or as a single statement without a
// transaction): s is not on a caller's transaction (whose statements go
// one by one in it) and ctx carries no before-commit hook (an
// Idempotency-Key record to mark in the same transaction).
func (s *Service) pipelined(ctx context.Context) (db.Batcher, bool) {
	if _, inTx := s.exec.(pgx.Tx); inTx || db.HasBeforeCommit(ctx) {
		return nil, false
	}
	b, ok := s.exec.(db.Batcher)
	return b, ok
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
		if l.Epoch == f.Epoch && l.Outcome == nil {
			// Not ended at this epoch, yet not completed: a batch
			// completion leaves out an entry whose item waits for
			// unfinished work. That is blocked only while the lease is
			// held by the fence's clock; an expired one is lost (below).
			held, err := dbq.New().LeaseHeld(ctx, tx, dbq.LeaseHeldParams{ProjectID: project, LeaseID: l.ID, Now: s.clock.Now()})
			if err != nil {
				return err
			}
			it, err := s.graphOn(tx).Item(ctx, project, l.ItemID)
			if err != nil {
				return err
			}
			if held && it.ActiveLeaseID != nil && *it.ActiveLeaseID == l.ID && graph.WaitsForWork(it) {
				answer = blocked(l, it)
				return nil
			}
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

// blockedError is the answer to a completion refused because its item
// waits for unfinished work (errBlocked): the lease and the item as they
// are now, read after the refusal, to name that work.
func (s *Service) blockedError(ctx context.Context, project uuid.UUID, f Fence) error {
	var answer error
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, err := s.getLease(ctx, tx, project, f.LeaseID)
		if err != nil {
			return err
		}
		it, err := s.graphOn(tx).Item(ctx, project, l.ItemID)
		answer = blocked(l, it)
		return err
	})
	if err != nil {
		return err
	}
	return answer
}

// blocked is the blocked refusal of a completion of l's item it: its
// message names the unfinished dependencies and children, its details
// list their ids ("dependencies", "children"), the item and the lease.
func blocked(l Lease, it graph.Item) *wgerr.Error {
	what, deps, kids := graph.UnfinishedWork(it)
	if what == "" {
		what = "work that was unfinished when the completion ran"
	}
	return &wgerr.Error{
		Code: wgerr.CodeBlocked,
		Message: "item " + it.ID.String() + " cannot be completed: it waits for " + what +
			", added while it was leased; the lease is still held: complete it once that work is finished, or release or fail it",
		Details: map[string]any{
			"lease_id": l.ID, "epoch": l.Epoch, "item_id": it.ID,
			"dependencies": deps, "children": kids,
		},
	}
}
