package attention

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Decide resolves an open uncertain_outcome request with a person's
// decision, once, in one transaction: the request is resolved with the
// decision (and note, optional, kept as its answer) recorded as by's, the
// item is released from it, and then:
//   - DecisionRetry: the item is claimable again (no continuity window: the
//     attempt that expired keeps no claim on it); the next claim's epoch is
//     one above the expired lease's;
//   - DecisionDone: the item is done with result (JSON, optional), finished
//     by the person's decision, not by a lease;
//   - DecisionCancel: the item is cancelled (graph.Cancel) by by.
//
// A late report from the expired attempt changes none of this: it was
// refused as lease_lost and kept as an observation of that lease.
//
// Errors: invalid_argument (decision, result, by); not_found; conflict (the
// request is closed, or is not an uncertain_outcome, or the item is no
// longer open).
func (s *Service) Decide(ctx context.Context, project, id uuid.UUID, decision Decision, result json.RawMessage, note, by string) (Request, error) {
	switch decision {
	case DecisionRetry, DecisionDone, DecisionCancel:
	default:
		return Request{}, wgerr.InvalidField("decision", "must be %q, %q or %q", DecisionRetry, DecisionDone, DecisionCancel)
	}
	if len(result) > 0 && decision != DecisionDone {
		return Request{}, wgerr.InvalidField("result", "is only for the decision %q", DecisionDone)
	}
	if len(result) > 0 && !json.Valid(result) {
		return Request{}, wgerr.InvalidField("result", "must be valid JSON")
	}
	note = strings.TrimSpace(note)
	answer := fmt.Sprintf("decision: %s", decision)
	if len(answer)+len(": ")+len(note) > maxAnswerBytes {
		return Request{}, wgerr.InvalidField("note", "must be at most %d bytes", maxAnswerBytes-len(answer)-len(": "))
	}
	if note != "" {
		answer += ": " + note
	}
	return s.close(ctx, project, id, StateResolved, &answer, by, &closeOpts{
		decision: &decision,
		reason:   ReasonUncertainOutcome,
		after: func(tx pgx.Tx, r Request) error {
			var err error
			switch decision {
			case DecisionDone:
				_, err = graph.NewService(tx, s.clock).Finish(ctx, project, r.ItemID, result)
			case DecisionCancel:
				_, err = graph.NewService(tx, s.clock).Cancel(ctx, project, r.ItemID, by, "uncertain outcome: "+answer)
			}
			return err
		},
	})
}
