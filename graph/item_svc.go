package graph

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
)

// Item reads an item with State and BlockedBy filled.
// Errors: not_found when the item is not in the project.
func (s *Service) Item(ctx context.Context, project, id uuid.UUID) (Item, error) {
	var out Item
	err := s.read(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = getItem(ctx, tx, s.clock.Now(), project, id)
		return err
	})
	return out, err
}

// read runs fn in a read-only REPEATABLE READ transaction, so that the
// several queries of one answer see one snapshot.
func (s *Service) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return db.Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return db.Translate(err)
	}
	return db.Translate(tx.Commit(ctx))
}
