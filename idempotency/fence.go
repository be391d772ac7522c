package idempotency

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Effect says which transactions of a request count as its effect.
type Effect int

const (
	// EffectWrites: any transaction that wrote.
	EffectWrites Effect = iota
	// EffectLease: a transaction that granted a lease to the request's
	// token (a claim); the lease is kept as the record's EffectRef.
	EffectLease
)

// Fence returns ctx carrying a hook run by every outermost transaction
// db.InTx runs with it, just before it commits: the record of r is marked
// as having taken effect in that very transaction, which fails with
// conflict (and rolls the writes back) when another request took the
// record over. Transactions that made no effect of the kind pass unmarked.
// marked is called after each transaction the hook marked.
//
// For a claim (EffectLease) the context also carries the hook's form that
// rides in the batch of a claim sent as one statement (db.CarriedCommit:
// MarkIdempotentClaimCarried, which raises instead of answering).
func (s *Store) Fence(ctx context.Context, r Request, kind Effect, marked func()) context.Context {
	if kind == EffectLease {
		ctx = db.WithCarriedCommit(ctx, db.CarriedCommit{
			Then: func(q db.DBTX) error {
				return s.q.MarkIdempotentClaimCarried(ctx, q, dbq.MarkIdempotentClaimCarriedParams{
					TokenID: &r.TokenID, Key: r.Key, Owner: &r.Owner,
				})
			},
			Marked: marked,
		})
	}
	return db.WithBeforeCommit(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var m dbq.MarkIdempotentEffectRow
		var err error
		if kind == EffectLease {
			var c dbq.MarkIdempotentClaimRow
			c, err = s.q.MarkIdempotentClaim(ctx, tx, dbq.MarkIdempotentClaimParams{
				TokenID: &r.TokenID, Key: r.Key, Owner: &r.Owner,
			})
			m = dbq.MarkIdempotentEffectRow(c)
		} else {
			m, err = s.q.MarkIdempotentEffect(ctx, tx, dbq.MarkIdempotentEffectParams{
				TokenID: r.TokenID, Key: r.Key, Owner: &r.Owner,
			})
		}
		if err != nil {
			return err
		}
		if m.Wrote && !m.Marked {
			return wgerr.New(wgerr.CodeConflict, "the request with Idempotency-Key %q was taken over by a retry; nothing was changed", r.Key)
		}
		if m.Marked && marked != nil {
			marked()
		}
		return nil
	})
}
