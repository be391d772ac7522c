package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

// newRow is a validated item about to be inserted, with its counters
// already computed by the caller.
type newRow struct {
	id       uuid.UUID
	parentID uuid.UUID // uuid.Nil: none
	title    string
	body     string
	priority int32
	labels   []string
	requires []string
	touches  []string
	metadata json.RawMessage
	unmet    int32
	children int32
	planKey  string // "": none
	onExpiry string // "": the project's default
}

// newEdge is a dependency about to be inserted: item waits for dependsOn.
type newEdge struct{ item, dependsOn uuid.UUID }

// insertRows inserts items (in order, so seq follows the slice) and
// dependency edges, each with one statement however many there are.
func insertRows(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, by string, rows []newRow, edges []newEdge) error {
	n := len(rows)
	p := dbq.InsertItemsParams{
		ProjectID: project, CreatedBy: by, Now: now,
		Ids: make([]uuid.UUID, n), ParentIds: make([]uuid.UUID, n), Titles: make([]string, n),
		Bodies: make([]string, n), Priorities: make([]int32, n), Labels: make([]string, n),
		Metadata: make([]string, n), Unmet: make([]int32, n), Children: make([]int32, n),
		PlanKeys: make([]string, n), OnExpiry: make([]string, n),
		Requires: make([]string, n), Touches: make([]string, n),
	}
	for i, r := range rows {
		p.Ids[i], p.ParentIds[i], p.Titles[i], p.Bodies[i] = r.id, r.parentID, r.title, r.body
		p.Priorities[i], p.Labels[i], p.Unmet[i], p.Children[i] = r.priority, labelsJSON(r.labels), r.unmet, r.children
		p.Metadata[i], p.PlanKeys[i], p.OnExpiry[i] = "{}", r.planKey, r.onExpiry
		p.Requires[i], p.Touches[i] = labelsJSON(r.requires), labelsJSON(r.touches)
		if len(r.metadata) > 0 {
			p.Metadata[i] = string(r.metadata)
		}
	}
	q := dbq.New()
	if n > 0 {
		if err := q.InsertItems(ctx, tx, p); err != nil {
			return err
		}
	}
	if len(edges) == 0 {
		return nil
	}
	e := dbq.InsertDependenciesParams{
		ProjectID: project, CreatedBy: by, Now: now,
		ItemIds: make([]uuid.UUID, len(edges)), DependsOnIds: make([]uuid.UUID, len(edges)),
	}
	for i, d := range edges {
		e.ItemIds[i], e.DependsOnIds[i] = d.item, d.dependsOn
	}
	return q.InsertDependencies(ctx, tx, e)
}

// lockParent locks an existing parent for new children and checks it is
// open. Errors: not_found, conflict (the parent is finished).
func lockParent(ctx context.Context, tx pgx.Tx, project, parentID uuid.UUID) error {
	row, err := dbq.New().LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: parentID})
	if err != nil {
		if isNoRows(err) {
			return notFound("parent item", parentID)
		}
		return err
	}
	if row.Status != string(StatusOpen) {
		return conflictf("parent item %s is %s; children can only be added to an open item", parentID, row.Status)
	}
	return nil
}
