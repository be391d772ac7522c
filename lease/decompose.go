package lease

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
)

// Decompose splits the leased item into children (with dependencies among
// them by key) and ends the lease as decomposed, in one transaction. The
// item then waits for its children and becomes ready again (not done) when
// they are all finished. The children are created by the lease's principal.
//
// A budget over the item with a depth limit refuses a decomposition whose
// children would sit deeper than the limit below the budget's item (the
// graph's rule for every new child, graph.Service.CreateChildren).
//
// Errors: invalid_argument (epoch, children); dependency_cycle among the
// children; depth_limit; not_found; lease_lost.
func (s *Service) Decompose(ctx context.Context, project uuid.UUID, f Fence, children []graph.NewChild) (Decomposition, error) {
	if err := checkFence(f); err != nil {
		return Decomposition{}, err
	}
	var out Decomposition
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		held, err := s.lockLease(ctx, tx, project, f)
		if err != nil {
			return err
		}
		kids, err := s.graphOn(tx).CreateChildren(ctx, project, held.ItemID, children, held.Principal)
		if err != nil {
			return err
		}
		ids := make([]uuid.UUID, len(kids))
		for i, k := range kids {
			ids[i] = k.ID
		}
		l, _, err := s.endLease(ctx, tx, project, f, ending{
			outcome: OutcomeDecomposed, detail: mustJSON(map[string]any{"children": ids}),
		})
		if err != nil {
			return err
		}
		// The children were read before the lease ended; only the parent's
		// row changed since, so they are current.
		out = Decomposition{Lease: l, Children: kids}
		return nil
	})
	if errors.Is(err, errFenced) {
		return Decomposition{}, s.refused(ctx, project, f, opDecompose, nil, map[string]any{"children": len(children)})
	}
	return out, err
}
