package graph

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// AddDependency records that itemID depends on dependsOn (itemID waits
// until dependsOn is finished). A dependency on a done or cancelled item is
// stored as satisfied; otherwise itemID gains an unmet dependency (an active
// lease on it stays: no pre-emption). The edge is refused when it would close
// a cycle in the waits-for graph (dependencies and parent/child edges), and
// concurrent additions in one project are serialised so that two edges that
// together close a cycle cannot both succeed.
//
// Errors: invalid_argument when by is empty or itemID is done or
// cancelled; not_found when either item is not in the project;
// already_exists when the edge exists; *CycleError (dependency_cycle)
// naming the cycle, including the one-item cycle of an item that would
// depend on itself.
func (s *Service) AddDependency(ctx context.Context, project, itemID, dependsOn uuid.UUID, by string) error {
	if err := checkBy(by); err != nil {
		return err
	}
	now := s.clock.Now()
	q := dbq.New()
	return db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		if err := lockGraph(ctx, tx, project); err != nil {
			return err
		}
		// The prerequisite first: a concurrent finish of it waits for us
		// and then sees the new edge, or we wait for it and see it done.
		pre, err := q.ShareLockItems(ctx, tx, dbq.ShareLockItemsParams{ProjectID: project, Ids: []uuid.UUID{dependsOn}})
		if err != nil {
			return err
		}
		if len(pre) == 0 {
			return &wgerr.Error{Code: wgerr.CodeNotFound, Field: "depends_on", Message: "depends_on: item " + dependsOn.String() + " not found"}
		}
		if itemID == dependsOn {
			return cycleError(ctx, tx, now, project, []uuid.UUID{itemID, itemID}, nil)
		}
		waiter, err := q.LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: itemID})
		if err != nil {
			if isNoRows(err) {
				return notFound("item", itemID)
			}
			return err
		}
		if waiter.Status != string(StatusOpen) {
			return wgerr.InvalidField("item", "item %s is %s; only an open item can gain dependencies", itemID, waiter.Status)
		}
		path, err := findPath(ctx, tx, project, []uuid.UUID{dependsOn}, itemID)
		if err != nil {
			return err
		}
		if path != nil {
			// itemID -> dependsOn -> ... -> itemID
			return cycleError(ctx, tx, now, project, append([]uuid.UUID{itemID}, path...), nil)
		}
		n, err := q.InsertDependency(ctx, tx, dbq.InsertDependencyParams{
			ProjectID: project, ItemID: itemID, DependsOnID: dependsOn, CreatedBy: by, Now: now,
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return wgerr.New(wgerr.CodeAlreadyExists, "item %s already depends on %s", itemID, dependsOn)
		}
		if pre[0].Status != string(StatusOpen) {
			return nil
		}
		if err := events.SetActor(ctx, tx, by); err != nil {
			return err
		}
		return q.AddUnmetDependencies(ctx, tx, dbq.AddUnmetDependenciesParams{Delta: 1, Now: now, ProjectID: project, ID: itemID})
	})
}

// RemoveDependency deletes the edge "itemID depends on dependsOn" and
// recomputes itemID's readiness (one unmet dependency fewer when dependsOn
// is still open).
//
// Errors: not_found when the edge does not exist.
func (s *Service) RemoveDependency(ctx context.Context, project, itemID, dependsOn uuid.UUID) error {
	now := s.clock.Now()
	q := dbq.New()
	return db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		// Same order as AddDependency and finishing: prerequisite, then waiter.
		pre, err := q.ShareLockItems(ctx, tx, dbq.ShareLockItemsParams{ProjectID: project, Ids: []uuid.UUID{dependsOn}})
		if err != nil {
			return err
		}
		if _, err := q.LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: itemID}); err != nil && !isNoRows(err) {
			return err
		}
		n, err := q.DeleteDependency(ctx, tx, dbq.DeleteDependencyParams{ProjectID: project, ItemID: itemID, DependsOnID: dependsOn})
		if err != nil {
			return err
		}
		if n == 0 || len(pre) == 0 {
			return wgerr.New(wgerr.CodeNotFound, "item %s does not depend on %s", itemID, dependsOn)
		}
		if pre[0].Status != string(StatusOpen) {
			return nil
		}
		if err := events.SetActor(ctx, tx, ""); err != nil {
			return err
		}
		return q.AddUnmetDependencies(ctx, tx, dbq.AddUnmetDependenciesParams{Delta: -1, Now: now, ProjectID: project, ID: itemID})
	})
}
