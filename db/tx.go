package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what generated queries run on: a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Beginner starts transactions; *pgxpool.Pool and pgx.Tx both are one (a
// pgx.Tx begins a savepoint).
type Beginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

var _ Beginner = (*pgxpool.Pool)(nil)

// maxAttempts bounds retries of a transaction that failed with a
// serialization failure or a deadlock.
const maxAttempts = 5

// InTx runs fn in one READ COMMITTED transaction and commits it when fn
// returns nil. A transaction that fails with a serialization failure or a
// deadlock is retried from the start (fn must be safe to run again); any
// error comes back translated by Translate. An operation that spans
// packages takes the pgx.Tx that InTx hands it, so it commits or rolls back
// as one.
func InTx(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err = runTx(ctx, b, fn)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return Translate(err)
}

func runTx(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	tx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if hook, ok := ctx.Value(beforeCommitKey{}).(BeforeCommit); ok {
		if _, nested := b.(pgx.Tx); !nested {
			if err := hook(ctx, tx); err != nil {
				_ = tx.Rollback(context.WithoutCancel(ctx))
				return err
			}
		}
	}
	return tx.Commit(ctx)
}

// BeforeCommit runs inside a transaction of InTx just before it commits; an
// error rolls the transaction back and is InTx's answer. The API uses it to
// fence a request's writes on the request's Idempotency-Key record.
type BeforeCommit func(ctx context.Context, tx pgx.Tx) error

type beforeCommitKey struct{}

// WithBeforeCommit returns ctx carrying hook: every outermost transaction
// InTx runs with that context calls it before committing (savepoints of a
// caller's transaction do not: their outermost transaction does).
func WithBeforeCommit(ctx context.Context, hook BeforeCommit) context.Context {
	return context.WithValue(ctx, beforeCommitKey{}, hook)
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}
