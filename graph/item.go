package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

func getItem(ctx context.Context, q dbq.DBTX, now *time.Time, project, id uuid.UUID) (Item, error) {
	row, err := dbq.New().GetItem(ctx, q, dbq.GetItemParams{Now: now, ProjectID: project, ID: id})
	if err != nil {
		if isNoRows(err) {
			return Item{}, notFound("item", id)
		}
		return Item{}, err
	}
	items := []Item{itemFromRow(row.Item, row.State, row.DbNow)}
	if err := fillBlockedBy(ctx, q, now, project, items); err != nil {
		return Item{}, err
	}
	return items[0], nil
}

// getItems reads items by id, in creation order, with BlockedBy filled.
// Missing ids are left out.
func getItems(ctx context.Context, q dbq.DBTX, now *time.Time, project uuid.UUID, ids []uuid.UUID) ([]Item, error) {
	rows, err := dbq.New().GetItems(ctx, q, dbq.GetItemsParams{Now: now, ProjectID: project, Ids: ids})
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(rows))
	for i, r := range rows {
		items[i] = itemFromRow(r.Item, r.State, r.DbNow)
	}
	return items, fillBlockedBy(ctx, q, now, project, items)
}

// itemFromRow converts a stored row; dbNow decides the time gates listed in
// BlockedBy (the lists are filled by fillBlockedBy).
func itemFromRow(r dbq.Item, state string, dbNow time.Time) Item {
	it := Item{
		ProjectID:       r.ProjectID,
		ID:              r.ID,
		ParentID:        r.ParentID,
		Title:           r.Title,
		Body:            r.Body,
		Priority:        r.Priority,
		Labels:          r.Labels,
		Requires:        r.Requires,
		Touches:         r.Touches,
		Metadata:        r.Metadata,
		Result:          r.Result,
		Status:          Status(r.Status),
		State:           State(state),
		Epoch:           r.Epoch,
		Version:         r.Version,
		ActiveLeaseID:   r.ActiveLeaseID,
		PreviousWorker:  r.PreviousWorker,
		PreferredWorker: r.PreferredWorker,
		PreferredUntil:  r.PreferredUntil,
		NotBefore:       r.NotBefore,
		Failures:        r.Failures,
		CreatedBy:       r.CreatedBy,
		CreatedAt:       r.CreatedAt,
		UpdatedAt:       r.UpdatedAt,
		FinishedAt:      r.FinishedAt,
		Seq:             r.Seq,
		OnExpiry:        r.OnExpiry,
		PlanKey:         r.PlanKey,
		gates:           gates{r.UnmetDependencies, r.OpenChildren, r.OpenAttention, len(r.BudgetRoots) > 0},
	}
	if it.Labels == nil {
		it.Labels = []string{}
	}
	if it.Requires == nil {
		it.Requires = []string{}
	}
	if it.Touches == nil {
		it.Touches = []string{}
	}
	if len(it.Metadata) == 0 {
		it.Metadata = json.RawMessage(`{}`)
	}
	if r.Status == string(StatusOpen) {
		if r.NotBefore != nil && r.NotBefore.After(dbNow) {
			t := *r.NotBefore
			it.BlockedBy.RetryAfter = &t
		}
		if r.PreferredWorker != nil && r.PreferredUntil != nil && r.PreferredUntil.After(dbNow) {
			w, t := *r.PreferredWorker, *r.PreferredUntil
			it.BlockedBy.ReservedFor, it.BlockedBy.ReservedUntil = &w, &t
		}
	}
	return it
}

// fillBlockedBy lists the open prerequisites and open children (at most
// MaxBlockedByRefs of each, with their counts) and the open blocking
// attention requests of the open items among items, the live
// leases holding scopes that overlap a ready item's touches, and the spent
// budgets over a ready item under a budget, with one query per kind for all
// of them.
//
// The counters on the item rows say which lists can be non-empty (they are
// kept exact by every writer), so an item that is ready, like one just
// claimed, costs no query at all.
func fillBlockedBy(ctx context.Context, q dbq.DBTX, now *time.Time, project uuid.UUID, items []Item) error {
	var waiting, parents, held, touching, budgeted []uuid.UUID
	index := make(map[uuid.UUID]int, len(items))
	for i, it := range items {
		index[it.ID] = i
		if it.Status != StatusOpen {
			continue
		}
		items[i].BlockedBy.DependenciesTotal = int(it.gates.unmetDependencies)
		items[i].BlockedBy.ChildrenTotal = int(it.gates.openChildren)
		if it.gates.unmetDependencies > 0 {
			waiting = append(waiting, it.ID)
		}
		if it.gates.openChildren > 0 {
			parents = append(parents, it.ID)
		}
		if it.gates.openAttention > 0 {
			held = append(held, it.ID)
		}
		if it.State == StateReady && len(it.Touches) > 0 {
			touching = append(touching, it.ID)
		}
		if it.State == StateReady && it.gates.budgeted {
			budgeted = append(budgeted, it.ID)
		}
	}
	qs := dbq.New()
	if len(waiting) > 0 {
		if err := fillPrerequisites(ctx, qs, q, now, project, waiting, items, index); err != nil {
			return err
		}
	}
	if len(parents) > 0 {
		children, err := qs.OpenChildRefs(ctx, q, dbq.OpenChildRefsParams{Now: now, ProjectID: project, Ids: parents, PerItem: MaxBlockedByRefs})
		if err != nil {
			return err
		}
		for _, c := range children {
			b := &items[index[c.ParentID]].BlockedBy
			b.Children = append(b.Children, ItemRef{ID: c.ID, Title: c.Title, State: State(c.State)})
		}
	}
	if len(held) > 0 {
		reqs, err := qs.OpenBlockingAttention(ctx, q, dbq.OpenBlockingAttentionParams{ProjectID: project, Ids: held})
		if err != nil {
			return err
		}
		for _, r := range reqs {
			b := &items[index[r.ItemID]].BlockedBy
			b.Attention = append(b.Attention, AttentionRef{ID: r.ID, Question: r.Question, CreatedAt: r.CreatedAt})
		}
	}
	if len(touching) > 0 {
		holders, err := qs.ScopeHolders(ctx, q, dbq.ScopeHoldersParams{ProjectID: project, Ids: touching})
		if err != nil {
			return err
		}
		for _, h := range holders {
			it := &items[index[h.ItemID]]
			var overlapping []string
			for _, sc := range h.Scopes {
				if ScopesOverlap([]string{sc}, it.Touches) {
					overlapping = append(overlapping, sc)
				}
			}
			it.BlockedBy.Scopes = append(it.BlockedBy.Scopes,
				ScopeHolder{LeaseID: h.LeaseID, ItemID: h.HolderItemID, Worker: h.Worker, Scopes: overlapping})
		}
	}
	if len(budgeted) > 0 {
		spent, err := qs.SpentBudgetsOver(ctx, q, dbq.SpentBudgetsOverParams{Now: now, ProjectID: project, Ids: budgeted})
		if err != nil {
			return err
		}
		for _, s := range spent {
			b := &items[index[s.ItemID]].BlockedBy
			b.Budgets = append(b.Budgets, ItemRef{ID: s.BudgetItemID, Title: s.BudgetTitle, State: State(s.BudgetState)})
		}
	}
	return nil
}

// fillPrerequisites lists the open prerequisites of the waiting items, at
// most MaxBlockedByRefs of each.
func fillPrerequisites(ctx context.Context, qs *dbq.Queries, q dbq.DBTX, now *time.Time, project uuid.UUID,
	waiting []uuid.UUID, items []Item, index map[uuid.UUID]int) error {
	prereqs, err := qs.OpenPrerequisiteRefs(ctx, q, dbq.OpenPrerequisiteRefsParams{Now: now, ProjectID: project, Ids: waiting, PerItem: MaxBlockedByRefs})
	if err != nil {
		return err
	}
	for _, p := range prereqs {
		b := &items[index[p.WaiterID]].BlockedBy
		b.Dependencies = append(b.Dependencies, ItemRef{ID: p.ID, Title: p.Title, State: State(p.State)})
	}
	return nil
}

// refsByID reads ItemRefs of the given ids.
func refsByID(ctx context.Context, q dbq.DBTX, now *time.Time, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]ItemRef, error) {
	rows, err := dbq.New().ItemRefs(ctx, q, dbq.ItemRefsParams{Now: now, ProjectID: project, Ids: ids})
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]ItemRef, len(rows))
	for _, r := range rows {
		out[r.ID] = ItemRef{ID: r.ID, Title: r.Title, State: State(r.State)}
	}
	return out, nil
}

// ClaimedItem converts the row of an item as the claiming statement left
// it (lease.Service.Claim reads it from the claim's own answer): leased, and
// with nothing to list in BlockedBy, since only a ready item is claimed
// (no open prerequisites, children or blocking requests) and the claim
// clears its continuity reservation. dbNow is the instant the claim's time
// gates used.
func ClaimedItem(r dbq.Item, dbNow time.Time) Item {
	return itemFromRow(r, string(StateLeased), dbNow)
}

// FinishedItem converts the row of an item as the statement that finished
// it left it (lease.Service.Complete): done or cancelled, so its state is
// its status and it is blocked by nothing.
func FinishedItem(r dbq.Item) Item {
	return itemFromRow(r, r.Status, r.UpdatedAt)
}
