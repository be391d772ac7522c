package graph

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
)

// Item reads an item with State and BlockedBy filled (inside a caller's
// transaction, as that transaction sees it).
// Errors: not_found when the item is not in the project.
func (s *Service) Item(ctx context.Context, project, id uuid.UUID) (Item, error) {
	var out Item
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		out, err = getItem(ctx, tx, s.clock.Now(), project, id)
		return err
	})
	return out, err
}

// Items reads items by id (inside a caller's transaction, as that
// transaction sees it), in creation order, with State and BlockedBy
// filled. Ids not in the project are left out.
func (s *Service) Items(ctx context.Context, project uuid.UUID, ids []uuid.UUID) ([]Item, error) {
	var out []Item
	err := db.InReadTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		out, err = getItems(ctx, tx, s.clock.Now(), project, ids)
		return err
	})
	return out, err
}
