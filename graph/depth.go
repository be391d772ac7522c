package graph

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The depth limit of a budget (budgets.max_depth, set by lease.SetBudget)
// bounds how deep items may be created below the budget's item (its
// children are at depth 1). Every way a child is created checks it, in the
// transaction that inserts and after the parent is locked: CreateItem with
// a parent, CreateChildren (which decomposition uses) and ImportPlan below
// a stored item. It is a rule of the graph, not of one endpoint.

// depthLimitError is the refusal (depth_limit) of a new item that would
// sit at depth below the budget b's item, past its limit; its details
// name the budget's item, the limit and that depth.
func depthLimitError(b dbq.BudgetDepthLimitsRow, depth int, field string, details map[string]any) error {
	d := map[string]any{"budget_item_id": b.ItemID, "max_depth": b.MaxDepth, "depth": depth}
	for k, v := range details {
		d[k] = v
	}
	return &wgerr.Error{
		Code:  wgerr.CodeDepthLimit,
		Field: field,
		Message: fmt.Sprintf("the budget of item %s allows items to depth %d below it; this would create one at depth %d",
			b.ItemID, b.MaxDepth, depth),
		Details: d,
	}
}

// checkDepth refuses (depth_limit) new items as deep as levels below the
// existing item parent (1: its children) when that passes the depth limit
// of a budget over parent. field and details name the input in the error.
// An item under no budget costs one read of its row.
func checkDepth(ctx context.Context, tx pgx.Tx, project, parent uuid.UUID, levels int, field string, details map[string]any) error {
	limits, err := dbq.New().BudgetDepthLimits(ctx, tx, dbq.BudgetDepthLimitsParams{ProjectID: project, ItemID: parent})
	if err != nil {
		return err
	}
	// Tightest first: the first limit passed is the one to name.
	for _, b := range limits {
		if depth := int(b.Depth) + levels; depth > int(b.MaxDepth) {
			return depthLimitError(b, depth, field, details)
		}
	}
	return nil
}
