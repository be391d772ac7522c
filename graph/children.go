package graph

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// MaxChildren bounds one decomposition.
const MaxChildren = 1000

// CreateChildren creates children of parentID, with dependencies among
// them by key, in one transaction (a savepoint of the caller's when s is
// On it: a decomposition ends its lease in the same transaction), and adds them to the
// parent's open_children, so the parent waits for them (an active lease on
// the parent is left alone: no pre-emption). Each key must be non-empty and
// unique; DependsOnKeys refer to sibling keys. It returns the children in
// input order, with State and BlockedBy.
//
// Errors: invalid_argument (no children, too many, a bad field, a duplicate,
// empty or unknown key; the field names the child index); *CycleError
// (dependency_cycle) for a cycle among the children; depth_limit when the
// children would pass the depth limit of a budget over the parent;
// not_found when the parent is not in the project; conflict when the
// parent is not open.
func (s *Service) CreateChildren(ctx context.Context, project, parentID uuid.UUID, children []NewChild, by string) ([]Item, error) {
	var out []Item
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		out, err = createChildren(ctx, tx, s.clock.Now(), project, parentID, children, by)
		return err
	})
	return out, err
}

func createChildren(ctx context.Context, tx pgx.Tx, now *time.Time, project, parentID uuid.UUID, children []NewChild, by string) ([]Item, error) {
	if err := checkBy(by); err != nil {
		return nil, err
	}
	if len(children) == 0 {
		return nil, wgerr.InvalidField("children", "must not be empty")
	}
	if len(children) > MaxChildren {
		return nil, wgerr.InvalidField("children", "has %d items; at most %d are allowed", len(children), MaxChildren)
	}
	rows, waits, err := childRows(parentID, children)
	if err != nil {
		return nil, err
	}
	if cyc := keyCycle(waits); cyc != nil {
		e := &CycleError{}
		for _, i := range cyc {
			e.Cycle = append(e.Cycle, ItemRef{ID: rows[i].id, Title: rows[i].title, State: StateBlocked})
			e.Keys = append(e.Keys, children[i].Key)
		}
		return nil, e
	}
	var edges []newEdge
	for i, w := range waits {
		for _, j := range w {
			edges = append(edges, newEdge{item: rows[i].id, dependsOn: rows[j].id})
		}
	}
	if err := lockParent(ctx, tx, project, parentID, "parent"); err != nil {
		return nil, err
	}
	if err := checkDepth(ctx, tx, project, parentID, 1, "children", nil); err != nil {
		return nil, err
	}
	if err := insertRows(ctx, tx, now, project, by, rows, edges); err != nil {
		return nil, err
	}
	err = dbq.New().AddOpenChildren(ctx, tx, dbq.AddOpenChildrenParams{
		Delta: int32(len(rows)), Now: now, ProjectID: project, ID: parentID,
	})
	if err != nil {
		return nil, err
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	// Rows come back in seq order, which is input order.
	return getItems(ctx, tx, now, project, ids)
}

// childRows validates the children and gives each a new id. waits[i] lists
// the indexes child i depends on.
func childRows(parentID uuid.UUID, children []NewChild) ([]newRow, [][]int, error) {
	byKey := make(map[string]int, len(children))
	rows := make([]newRow, len(children))
	for i, c := range children {
		field := fmt.Sprintf("children[%d]", i)
		key := strings.TrimSpace(c.Key)
		if key == "" {
			return nil, nil, wgerr.InvalidField(field+".key", "must not be empty")
		}
		if err := input.Line(field+".key", key); err != nil {
			return nil, nil, err
		}
		if _, dup := byKey[key]; dup {
			return nil, nil, wgerr.InvalidField(field+".key", "%q is used twice", key)
		}
		byKey[key] = i
		title, err := cleanTitle(field+".title", c.Title)
		if err != nil {
			return nil, nil, err
		}
		if err := checkBody(field+".body", c.Body); err != nil {
			return nil, nil, err
		}
		labels, requires, touches, err := cleanMatching(field+".", c.Labels, c.Requires, c.Touches)
		if err != nil {
			return nil, nil, err
		}
		rows[i] = newRow{id: uuid.New(), parentID: parentID, title: title, body: c.Body, priority: c.Priority,
			labels: labels, requires: requires, touches: touches}
	}
	waits := make([][]int, len(children))
	for i, c := range children {
		seen := map[int]bool{}
		for _, k := range c.DependsOnKeys {
			j, ok := byKey[strings.TrimSpace(k)]
			if !ok {
				return nil, nil, wgerr.InvalidField(fmt.Sprintf("children[%d].depends_on_keys", i), "unknown key %q", k)
			}
			// A child that names itself closes a one-item cycle, which
			// keyCycle reports like any other.
			if !seen[j] {
				seen[j] = true
				waits[i] = append(waits[i], j)
			}
		}
		rows[i].unmet = int32(len(waits[i]))
	}
	return rows, waits, nil
}
