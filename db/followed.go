package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CarriedCommit is the form of a BeforeCommit hook that rides in the batch
// of a write sent as a single statement: Then's statements (recorded, as a
// Pipeline's followers: answers unread, raising to refuse) go right after
// the writing statement, in its implicit transaction; Marked is called
// when that batch committed a write the hook marked. The API's
// Idempotency-Key record of a claim (idempotency.Store.Fence) has one.
type CarriedCommit struct {
	Then   func(q DBTX) error
	Marked func()
}

type carriedCommitKey struct{}

// WithCarriedCommit returns ctx carrying c beside its BeforeCommit hook.
func WithCarriedCommit(ctx context.Context, c CarriedCommit) context.Context {
	return context.WithValue(ctx, carriedCommitKey{}, c)
}

// CarriedCommitFrom returns the CarriedCommit ctx carries.
func CarriedCommitFrom(ctx context.Context) (CarriedCommit, bool) {
	c, ok := ctx.Value(carriedCommitKey{}).(CarriedCommit)
	return c, ok
}

// Followed returns a DBTX whose first statement (a :one query, QueryRow)
// goes to b in one batch with then's statements after it: one round trip,
// one implicit transaction, an error of a follower failing the
// statement's answer and rolling it back. A statement that asks for a
// custom plan (CustomPlan) gets one through plan_cache_mode for the batch.
// Statements after the first go to next.
func Followed(b Batcher, next DBTX, then func(q DBTX) error) DBTX {
	return &followed{b: b, next: next, then: then}
}

type followed struct {
	b    Batcher
	next DBTX
	then func(q DBTX) error
	sent bool
}

func (f *followed) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !f.sent {
		return pgconn.CommandTag{}, errNotPipelined
	}
	return f.next.Exec(ctx, sql, args...)
}

func (f *followed) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !f.sent {
		return nil, errNotPipelined
	}
	return f.next.Query(ctx, sql, args...)
}

func (f *followed) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if f.sent {
		return f.next.QueryRow(ctx, sql, args...)
	}
	f.sent = true
	var rec recorder
	if err := f.then(&rec); err != nil {
		return errRow{err}
	}
	args, custom := withoutExecMode(args)
	b := &pgx.Batch{}
	if custom {
		b.Queue(customPlanSetting)
	}
	b.Queue(sql, args...)
	for _, q := range rec.queued {
		b.Queue(q.sql, q.args...)
	}
	br := f.b.SendBatch(ctx, b)
	if custom {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return errRow{err}
		}
	}
	return followedRow{row: br.QueryRow(), br: br, followers: len(rec.queued)}
}

// TraceBatch runs fn, an operation whose one write goes to the pool as a
// Followed batch (one implicit transaction, with the carried commit's
// statements), under the span of a database transaction (db.Pipeline), as
// InTx and Atomic run theirs: a child of the request's span, with the
// tags the request learnt by its end. fn runs with ctx itself, so what it
// tags is the request's. fn's error comes back as it is; it should be
// translated (Translate), as the span's problem code is read from it.
func TraceBatch(ctx context.Context, fn func() error) error {
	sctx, span := startSpan(ctx, spanPipeline)
	err := fn()
	endSpan(sctx, span, err)
	return err
}

// followedRow reads the followers' answers and the batch's end once the
// statement's row is scanned; a follower's error is the answer.
type followedRow struct {
	row       pgx.Row
	br        pgx.BatchResults
	followers int
}

func (r followedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	for range r.followers {
		if _, e := r.br.Exec(); e != nil && (err == nil || err == pgx.ErrNoRows) {
			err = e
		}
	}
	if e := r.br.Close(); e != nil && (err == nil || err == pgx.ErrNoRows) {
		err = e
	}
	return err
}
