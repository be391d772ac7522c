package graph

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Cancel is a person's cancel: the item and all its open descendants become
// cancelled in one transaction. Each active lease among them ends with
// outcome "cancelled" and outcome_detail {"by", "reason"} (the worker learns
// it on its next call: lease_lost), except one already past its expiry by
// the database clock, which ends as "expired" at its expires_at, as the
// reaper would have ended it; the items' previous_worker records the
// holder. Their open attention requests (blocking or not, a worker's, the
// system's or a person's hold) are dismissed by the person with the note
// "item cancelled" (and the reason), so the inbox no longer shows them and
// answering one is a conflict. Dependents and parents are recomputed as
// when an item is done (a cancelled prerequisite satisfies its dependents).
//
// Errors: invalid_argument when by is empty or reason longer than
// MaxReasonBytes; not_found when the item is not in the project; conflict
// when it is already done or cancelled.
func (s *Service) Cancel(ctx context.Context, project, id uuid.UUID, by, reason string) (Item, error) {
	if strings.TrimSpace(by) == "" {
		return Item{}, wgerr.InvalidField("by", "must name the person cancelling")
	}
	if len(reason) > MaxReasonBytes {
		return Item{}, wgerr.InvalidField("reason", "must be at most %d bytes", MaxReasonBytes)
	}
	if err := input.Prose("reason", reason); err != nil {
		return Item{}, err
	}
	now := s.clock.Now()
	q := dbq.New()
	var out Item
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		root, err := q.LockItem(ctx, tx, dbq.LockItemParams{ProjectID: project, ID: id})
		if err != nil {
			if isNoRows(err) {
				return notFound("item", id)
			}
			return err
		}
		if root.Status != string(StatusOpen) {
			return conflictf("item %s is already %s", id, root.Status)
		}
		if err := events.SetActor(ctx, tx, by); err != nil {
			return err
		}
		ids, err := lockOpenSubtree(ctx, tx, project, id)
		if err != nil {
			return err
		}
		ended, err := q.EndLeasesCancelled(ctx, tx, dbq.EndLeasesCancelledParams{
			Now: now, By: by, Reason: reason, ProjectID: project, ItemIds: ids,
		})
		if err != nil {
			return err
		}
		for _, l := range ended {
			if err := q.SetPreviousWorker(ctx, tx, dbq.SetPreviousWorkerParams{Worker: l.Worker, ProjectID: project, ID: l.ItemID}); err != nil {
				return err
			}
		}
		if _, err := finishItems(ctx, tx, now, project, ids, StatusCancelled, nil); err != nil {
			return err
		}
		if _, err := q.DismissAttentionCancelled(ctx, tx, dbq.DismissAttentionCancelledParams{
			Note: cancelNote(reason), By: by, Now: now, ProjectID: project, ItemIds: ids,
		}); err != nil {
			return err
		}
		out, err = getItem(ctx, tx, now, project, id)
		return err
	})
	return out, err
}

// MaxReasonBytes bounds a cancellation's reason, as a release's reason
// and an answer are bounded.
const MaxReasonBytes = 65536

// cancelNote is the dismissal note of the attention requests a cancel
// closes.
func cancelNote(reason string) string {
	if reason = strings.TrimSpace(reason); reason != "" {
		return "item cancelled: " + reason
	}
	return "item cancelled"
}

// lockOpenSubtree locks the open descendants of the (locked) root and
// returns root and descendants. It repeats until no new descendant appears,
// so a child created concurrently under a descendant is not left behind.
func lockOpenSubtree(ctx context.Context, tx pgx.Tx, project, root uuid.UUID) ([]uuid.UUID, error) {
	q := dbq.New()
	locked := map[uuid.UUID]bool{root: true}
	ids := []uuid.UUID{root}
	for {
		below, err := q.OpenDescendants(ctx, tx, dbq.OpenDescendantsParams{ProjectID: project, ID: root})
		if err != nil {
			return nil, err
		}
		var fresh []uuid.UUID
		for _, d := range below {
			if !locked[d] {
				fresh = append(fresh, d)
			}
		}
		if len(fresh) == 0 {
			return ids, nil
		}
		rows, err := q.LockItems(ctx, tx, dbq.LockItemsParams{ProjectID: project, Ids: fresh})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			locked[r.ID] = true
			if r.Status == string(StatusOpen) {
				ids = append(ids, r.ID)
			}
		}
	}
}
