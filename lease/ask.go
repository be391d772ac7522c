package lease

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
)

// Ask opens an attention request on the leased item, under the lease's
// fence. A blocking request ends the lease as attention_requested in the
// same transaction; the item waits until every blocking request on it is
// closed, and the lease's worker (its label and token) becomes its
// continuity preference. A
// non-blocking request leaves the lease running; its answer comes back on
// the worker's heartbeats. Source is always "worker"; RequestedBy defaults
// to the worker label; LeaseID, Epoch, Worker and WorkerToken are taken
// from the lease.
//
// A non-blocking request is refused (too_many_open_requests, and nothing
// changes) while the lease has MaxOpenQuestions open non-blocking
// requests: counted by the statement that inserts the request, under the
// lease's row lock, so concurrent asks of one lease, on any replica, never
// pass the bound.
//
// Errors: invalid_argument (epoch, request fields); not_found; lease_lost;
// too_many_open_requests.
func (s *Service) Ask(ctx context.Context, project uuid.UUID, f Fence, in attention.NewRequest) (AskResult, error) {
	if err := checkFence(f); err != nil {
		return AskResult{}, err
	}
	var out AskResult
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		held, err := s.lockLease(ctx, tx, project, f)
		if err != nil {
			return err
		}
		in.Source, in.Reason = attention.SourceWorker, attention.ReasonQuestion
		in.LeaseID, in.Epoch = &held.ID, &held.Epoch
		in.Worker, in.WorkerToken, in.MaxOpenOnLease = "", nil, MaxOpenQuestions
		if in.Blocking {
			in.Worker, in.WorkerToken, in.MaxOpenOnLease = held.Worker, held.TokenID, 0
		}
		if in.RequestedBy == "" {
			in.RequestedBy = held.Worker
		}
		req, err := s.attentionOn(tx).Open(ctx, project, held.ItemID, in)
		if err != nil {
			return err
		}
		out = AskResult{Request: req, Lease: held}
		if !in.Blocking {
			return nil
		}
		out.Lease, _, err = s.endLease(ctx, tx, project, f, ending{
			outcome: OutcomeAttentionRequested,
			detail:  mustJSON(map[string]any{"attention_request_id": req.ID}),
		})
		return err
	})
	if errors.Is(err, errFenced) {
		return AskResult{}, s.refused(ctx, project, f, opAsk, nil, map[string]any{"question": in.Question, "blocking": in.Blocking})
	}
	return out, err
}
