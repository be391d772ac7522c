package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
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
// dependency edges, each with one statement however many there are;
// a large import takes one more statement and an ANALYZE (analyzeItems):
// its first analyzeSample items, the statistics, then the rest, so the
// foreign-key checks of the rest (their plan parents) and of the edges
// find items by the primary key.
func insertRows(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, by string, rows []newRow, edges []newEdge) error {
	analyzed := false
	if len(rows) >= analyzeAfter {
		if err := insertItems(ctx, tx, now, project, by, rows[:analyzeSample]); err != nil {
			return err
		}
		analyzeItems(ctx, tx)
		rows, analyzed = rows[analyzeSample:], true
	}
	if err := insertItems(ctx, tx, now, project, by, rows); err != nil {
		return err
	}
	if len(edges) == 0 {
		return nil
	}
	if len(edges) >= analyzeAfter && !analyzed {
		analyzeItems(ctx, tx)
	}
	e := dbq.InsertDependenciesParams{
		ProjectID: project, CreatedBy: by, Now: now,
		ItemIds: make([]uuid.UUID, len(edges)), DependsOnIds: make([]uuid.UUID, len(edges)),
	}
	for i, d := range edges {
		e.ItemIds[i], e.DependsOnIds[i] = d.item, d.dependsOn
	}
	return dbq.New().InsertDependencies(ctx, tx, e)
}

// analyzeSample is how many items of a large import are inserted before
// analyzeItems: enough that the sample shows them sharing their project.
const analyzeSample = 500

// insertItems inserts rows, in order, with one statement (none when rows
// is empty).
func insertItems(ctx context.Context, tx pgx.Tx, now *time.Time, project uuid.UUID, by string, rows []newRow) error {
	n := len(rows)
	if n == 0 {
		return nil
	}
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
	return dbq.New().InsertItems(ctx, tx, p)
}

// analyzeItems refreshes the planner's statistics of items inside tx,
// after its new items and before a statement whose foreign-key checks look
// up many of them. Each check (one per edge and side) runs a plan chosen
// from the statistics: on a table that was never analyzed (a new
// deployment, a first large import) the planner cannot tell the primary
// key from items_by_seq, whose scan reads every item of the project, so
// 124,750 edges between 500 new items took six times as long as with
// statistics that count them (the transaction's own rows are sampled).
// Best effort and bounded: a failure (a role that does not own the table)
// or a lock held by a VACUUM or another import's ANALYZE for more than
// analyzeLockWait leaves the checks to the plans they had, and rolls back
// only its savepoint. The lock it takes (SHARE UPDATE EXCLUSIVE, which
// writes do not wait for) is held until tx ends.
func analyzeItems(ctx context.Context, tx pgx.Tx) {
	_ = db.Atomic(ctx, tx, func(q db.DBTX) error {
		var prev string
		if err := q.QueryRow(ctx, "SELECT current_setting('lock_timeout'), set_config('lock_timeout', $1, true)",
			analyzeLockWait).Scan(&prev, new(string)); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, "ANALYZE items"); err != nil {
			return err
		}
		_, err := q.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)", prev)
		return err
	})
}

// analyzeLockWait bounds how long analyzeItems waits for the statistics'
// lock.
const analyzeLockWait = "200ms"

// lockParent locks an existing parent for new children and checks it is
// open. Errors: not_found (naming field, the input that gave the parent),
// conflict (the parent is finished).
func lockParent(ctx context.Context, tx pgx.Tx, project, parentID uuid.UUID, field string) error {
	row, err := dbq.New().LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: parentID})
	if err != nil {
		if isNoRows(err) {
			return &wgerr.Error{Code: wgerr.CodeNotFound, Field: field,
				Message: field + ": parent item " + parentID.String() + " not found"}
		}
		return err
	}
	if row.Status != string(StatusOpen) {
		return conflictf("parent item %s is %s; children can only be added to an open item", parentID, row.Status)
	}
	return nil
}
