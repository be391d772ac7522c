package graph

import (
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// MaxDependsOn bounds the dependencies given at creation.
const MaxDependsOn = 1000

// CreateItem creates an item, with its parent and dependencies, in one
// transaction. The title is trimmed (1..500 characters), the body is at
// most 1 MiB, labels are 1..64 characters of [A-Za-z0-9._:/=+-] (at most 32),
// and so are the required capabilities (requires); touches are write
// scopes (CleanScopes); metadata is a JSON object. A dependency on a finished (done or cancelled)
// item is stored as satisfied. A parent must be open; it gains an open
// child (an active lease on it stays: no pre-emption).
//
// Errors: invalid_argument for bad input or a dependency on the item's own
// parent chain that would close a cycle is *CycleError (dependency_cycle);
// depth_limit when the parent sits at the depth limit of a budget over it
// (see checkDepth); payload_too_large for an oversized body or metadata; not_found when the
// project, the parent or a dependency does not exist; conflict when the
// parent is not open.
func (s *Service) CreateItem(ctx context.Context, project uuid.UUID, in NewItem) (Item, error) {
	row := newRow{id: uuid.New(), priority: in.Priority, body: in.Body}
	var err error
	if row.onExpiry, err = cleanOnExpiry("on_expiry", in.OnExpiry, true); err != nil {
		return Item{}, err
	}
	if row.title, err = cleanTitle("title", in.Title); err != nil {
		return Item{}, err
	}
	if err := checkBody("body", in.Body); err != nil {
		return Item{}, err
	}
	if row.labels, row.requires, row.touches, err = cleanMatching("", in.Labels, in.Requires, in.Touches); err != nil {
		return Item{}, err
	}
	if row.metadata, err = cleanMetadata("metadata", in.Metadata); err != nil {
		return Item{}, err
	}
	if err := checkBy(in.CreatedBy); err != nil {
		return Item{}, err
	}
	deps := slices.Clone(in.DependsOn)
	slices.SortFunc(deps, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	deps = slices.Compact(deps)
	if len(deps) > MaxDependsOn {
		return Item{}, wgerr.InvalidField("depends_on", "has %d items; at most %d are allowed", len(deps), MaxDependsOn)
	}
	if in.ParentID != nil {
		row.parentID = *in.ParentID
	}
	now := s.clock.Now()
	var out Item
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		if in.ParentID != nil && len(deps) > 0 {
			// parent waits for the new item, which waits for deps: a cycle
			// when the parent is reachable from a dependency.
			if err := lockGraph(ctx, tx, project); err != nil {
				return err
			}
		}
		// Prerequisites first, then the parent (the locking order).
		if len(deps) > 0 {
			locked, err := dbq.New().ShareLockItems(ctx, tx, dbq.ShareLockItemsParams{ProjectID: project, Ids: deps})
			if err != nil {
				return err
			}
			if len(locked) != len(deps) {
				return missingDependency(deps, locked)
			}
			row.unmet = 0
			for _, l := range locked {
				if l.Status == string(StatusOpen) {
					row.unmet++
				}
			}
		}
		if in.ParentID != nil {
			if err := lockParent(ctx, tx, project, *in.ParentID, "parent_id"); err != nil {
				return err
			}
			if err := checkDepth(ctx, tx, project, *in.ParentID, 1, "parent_id", nil); err != nil {
				return err
			}
			if len(deps) > 0 {
				path, err := findPath(ctx, tx, project, deps, *in.ParentID)
				if err != nil {
					return err
				}
				if path != nil {
					// new -> path[0] -> ... -> parent -> new
					cyc := append([]uuid.UUID{row.id}, path...)
					cyc = append(cyc, row.id)
					return cycleError(ctx, tx, now, project, cyc,
						map[uuid.UUID]ItemRef{row.id: {ID: row.id, Title: row.title, State: StateBlocked}})
				}
			}
		}
		edges := make([]newEdge, len(deps))
		for i, d := range deps {
			edges[i] = newEdge{item: row.id, dependsOn: d}
		}
		if err := insertRows(ctx, tx, now, project, in.CreatedBy, []newRow{row}, edges); err != nil {
			return err
		}
		if in.ParentID != nil {
			if err := events.SetActor(ctx, tx, in.CreatedBy); err != nil {
				return err
			}
			if err := dbq.New().AddOpenChildren(ctx, tx, dbq.AddOpenChildrenParams{Delta: 1, Now: now, ProjectID: project, ID: *in.ParentID}); err != nil {
				return err
			}
		}
		var err error
		out, err = getItem(ctx, tx, now, project, row.id)
		return err
	})
	return out, err
}

func missingDependency(want []uuid.UUID, got []dbq.ShareLockItemsRow) error {
	have := make(map[uuid.UUID]bool, len(got))
	for _, g := range got {
		have[g.ID] = true
	}
	for _, w := range want {
		if !have[w] {
			return &wgerr.Error{Code: wgerr.CodeNotFound, Field: "depends_on", Message: "depends_on: item " + w.String() + " not found"}
		}
	}
	return wgerr.New(wgerr.CodeNotFound, "a dependency was not found")
}
