package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Release ends the lease as released (reason in outcome_detail) and returns
// the item to circulation at once.
//
// Errors: invalid_argument (epoch, reason too long); not_found; lease_lost.
func (s *Service) Release(ctx context.Context, project uuid.UUID, f Fence, reason string) (Lease, error) {
	if err := checkFence(f); err != nil {
		return Lease{}, err
	}
	reason = strings.TrimSpace(reason)
	if len(reason) > maxMessageBytes {
		return Lease{}, wgerr.InvalidField("reason", "must be at most %d bytes", maxMessageBytes)
	}
	if err := input.Prose("reason", reason); err != nil {
		return Lease{}, err
	}
	end := ending{outcome: OutcomeReleased, detail: mustJSON(map[string]any{"reason": reason})}
	var out Lease
	var err error
	if b, ok := s.pipelined(ctx); ok {
		// The ending statement alone is the release: one statement, no
		// transaction around it (a batch of one, sent again after a
		// deadlock as InTx would). It raises rather than commit a lease
		// ended without its item.
		end.abortIfLost = true
		err = db.Pipeline(ctx, b, func(q db.DBTX) (err error) {
			out, _, err = s.endLease(ctx, q, project, f, end)
			return err
		}, func(db.DBTX) error { return nil })
	} else {
		err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
			var err error
			out, _, err = s.endLease(ctx, tx, project, f, end)
			return err
		})
	}
	if errors.Is(err, errFenced) {
		return Lease{}, s.refused(ctx, project, f, opRelease, nil, map[string]any{"reason": reason})
	}
	return out, err
}

// Fail ends the lease as failed (message and details in outcome_detail).
// The item counts the failure and returns to circulation after a backoff
// (RetryBackoff doubled per earlier consecutive failure, at most
// MaxRetryBackoff; the item's BlockedBy.RetryAfter shows it). After
// MaxFailures consecutive failures the item instead gets a blocking system
// attention request (reason repeated_failure), and its failure count and
// backoff are cleared for when a person sends it back.
//
// Errors: invalid_argument (epoch, message, details); not_found; lease_lost.
func (s *Service) Fail(ctx context.Context, project uuid.UUID, f Fence, in Failure) (FailResult, error) {
	if err := checkFence(f); err != nil {
		return FailResult{}, err
	}
	in.Message = strings.TrimSpace(in.Message)
	if len(in.Message) > maxMessageBytes {
		return FailResult{}, wgerr.InvalidField("message", "must be at most %d bytes", maxMessageBytes)
	}
	if err := input.Prose("message", in.Message); err != nil {
		return FailResult{}, err
	}
	details, err := optionalJSON("details", in.Details)
	if err != nil {
		return FailResult{}, err
	}
	detail := mustJSON(map[string]any{"message": in.Message, "details": details})
	var out FailResult
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, e, err := s.endLease(ctx, tx, project, f, ending{
			outcome: OutcomeFailed, detail: detail, workerTime: in.WorkerTime, failed: true,
		})
		if err != nil {
			return err
		}
		out = FailResult{Lease: l}
		if int(e.failures) >= s.cfg.MaxFailures {
			req, err := s.askForFailures(ctx, tx, project, l, e.failures, in.Message)
			if err != nil {
				return err
			}
			out.Attention = &req
		}
		out.Item, err = s.graphOn(tx).Item(ctx, project, l.ItemID)
		if err == nil && out.Attention == nil {
			out.RetryAfter = out.Item.NotBefore
		}
		return err
	})
	if errors.Is(err, errFenced) {
		return FailResult{}, s.refused(ctx, project, f, opFail, in.WorkerTime, map[string]any{"message": in.Message, "details": details})
	}
	return out, err
}

// maxQuotedBytes bounds the failure message quoted in an attention request.
const maxQuotedBytes = 4000

func (s *Service) askForFailures(ctx context.Context, tx pgx.Tx, project uuid.UUID, l Lease, failures int32, message string) (attention.Request, error) {
	if message == "" {
		message = "(no message)"
	}
	if len(message) > maxQuotedBytes {
		message = strings.ToValidUTF8(message[:maxQuotedBytes], "") + "…"
	}
	req, err := s.attentionOn(tx).Open(ctx, project, l.ItemID, attention.NewRequest{
		Question: fmt.Sprintf("This item failed %d times in a row. The last failure (worker %q): %s\n\n"+
			"Resolve to let workers retry it, or cancel it.", failures, l.Worker, message),
		Blocking:    true,
		Source:      attention.SourceSystem,
		Reason:      attention.ReasonRepeatedFailure,
		RequestedBy: "system",
		LeaseID:     &l.ID,
		Epoch:       &l.Epoch,
	})
	if err != nil {
		return attention.Request{}, err
	}
	err = dbq.New().ClearRetry(ctx, tx, dbq.ClearRetryParams{ProjectID: project, ItemID: l.ItemID})
	return req, err
}
