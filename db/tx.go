package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"

	"github.com/workgraph-dev/workgraph/telemetry"
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

// Executor is what a domain service runs on: a pool, or a caller's
// transaction. Single statements run on it directly; InTx and InReadTx
// begin a transaction on a pool and a savepoint inside a transaction, so
// an operation is written once and composes into a caller's transaction
// (services have an On(Executor) that rebinds them). *pgxpool.Pool and
// pgx.Tx both are one.
type Executor interface {
	DBTX
	Beginner
}

var (
	_ Executor = (*pgxpool.Pool)(nil)
	_ Executor = pgx.Tx(nil)
)

// maxAttempts bounds retries of a transaction that failed with a
// serialization failure or a deadlock.
const maxAttempts = 5

// InTx runs fn in one READ COMMITTED transaction and commits it when fn
// returns nil. A transaction that fails with a serialization failure or a
// deadlock is retried from the start (fn must be safe to run again); any
// error comes back translated by Translate. When b is itself a transaction
// (pgx.Tx), fn runs in a savepoint of it, once: an error rolls back to the
// savepoint and is returned (translated, the driver error still wrapped),
// and only the outermost InTx retries. An operation that spans packages
// takes the pgx.Tx that InTx hands it, so it commits or rolls back as one.
func InTx(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	if _, nested := b.(pgx.Tx); nested {
		return Translate(runTx(ctx, b, fn))
	}
	ctx, span := startSpan(ctx, spanTx)
	var err error
	attempt := 1
	for ; ; attempt++ {
		err = runTx(ctx, b, fn)
		if err == nil || !retryable(err) || ctx.Err() != nil || attempt == maxAttempts {
			break
		}
	}
	if attempt > 1 {
		telemetry.Set(ctx, attribute.Int("workgraph.tx.attempts", attempt))
	}
	err = Translate(err)
	endSpan(ctx, span, err)
	return err
}

// Atomic runs fn, one statement or a few that need no transaction of
// their own, directly on a pool, and in a savepoint inside a caller's
// transaction (b is a pgx.Tx), so that a statement that fails (a unique
// violation) leaves the caller's transaction usable. Errors come back
// translated by Translate.
func Atomic(ctx context.Context, e Executor, fn func(q DBTX) error) error {
	if _, nested := e.(pgx.Tx); nested {
		return InTx(ctx, e, func(tx pgx.Tx) error { return fn(tx) })
	}
	sctx, span := startSpan(ctx, spanAtomic)
	err := Translate(fn(e))
	endSpan(sctx, span, err)
	return err
}

// Join runs fn as a step of a caller's transaction when b is one (a
// pgx.Tx): directly in it, with no savepoint, so the step costs no extra
// round trips; an error then fails the caller's whole operation, which is
// what a step of it must do. On a pool it is InTx. Use it for the writes
// one service makes on behalf of another's transaction (a completion
// releasing dependents); use InTx where a caller may go on after the
// step fails. Errors come back translated by Translate.
func Join(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	if tx, nested := b.(pgx.Tx); nested {
		return Translate(fn(tx))
	}
	return InTx(ctx, b, fn)
}

// InReadTx runs fn, which only reads, in a read-only REPEATABLE READ
// transaction when b is a pool, so that the several queries of one answer
// see one snapshot. Inside a caller's transaction (a pgx.Tx) it runs fn
// directly in it, without a savepoint (a read of the claim or completion
// path costs no extra round trips): fn sees the caller's own writes, and a
// read that fails leaves the caller to return the error. Errors come back
// translated by Translate.
func InReadTx(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	if tx, nested := b.(pgx.Tx); nested {
		return Translate(fn(tx))
	}
	ctx, span := startSpan(ctx, spanReadTx)
	err := readTx(ctx, b, fn)
	endSpan(ctx, span, err)
	return err
}

func readTx(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	var tx pgx.Tx
	var err error
	if p, ok := b.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		tx, err = p.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	} else {
		tx, err = b.Begin(ctx)
	}
	if err != nil {
		return Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return Translate(err)
	}
	return Translate(tx.Commit(ctx))
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

// HasBeforeCommit says whether ctx carries a BeforeCommit hook: an
// operation that would write in one statement outside a transaction must
// then write inside one (InTx), so that the hook fences its write.
func HasBeforeCommit(ctx context.Context) bool {
	_, ok := ctx.Value(beforeCommitKey{}).(BeforeCommit)
	return ok
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	return false
}
