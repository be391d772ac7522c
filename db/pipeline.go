package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Batcher sends a pgx batch: a pool (or a connection). Its statements go
// to PostgreSQL in one network round trip and run in one implicit
// transaction that the batch's Sync commits; an error aborts the rest and
// rolls all of them back.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// errNotPipelined refuses what a pipeline cannot carry: a statement after
// the lead whose answer its function would read, or a second lead.
var errNotPipelined = errors.New("db: the statement cannot be pipelined")

// Pipeline runs lead's one statement and then's statements after it in one
// batch on b: one round trip, one implicit READ COMMITTED transaction,
// each statement with its own snapshot taken after the ones before it
// ended (so a later statement sees what an earlier one wrote and what
// others committed while it waited for a row lock). lead sends exactly one
// statement whose answer it reads (a generated :one or :many query); then
// sends only statements whose answer nobody reads (:exec, :execrows),
// which are recorded and queued after lead's, with their arguments as
// given. A statement that fails, lead's included, aborts the rest and
// nothing of the batch commits, so lead stops what follows it by failing
// (a fence that raises, see EndLease). Like InTx, a batch that fails with
// a serialization failure or a deadlock is sent again from the start
// (lead must be safe to run again), and errors come back translated.
func Pipeline(ctx context.Context, b Batcher, lead func(q DBTX) error, then func(q DBTX) error) error {
	var rec recorder
	if err := then(&rec); err != nil {
		return Translate(err)
	}
	ctx, span := startSpan(ctx, spanPipeline)
	var err error
	for attempt := 1; ; attempt++ {
		err = sendPipeline(ctx, b, lead, rec.queued)
		if err == nil || !retryable(err) || ctx.Err() != nil || attempt == maxAttempts {
			break
		}
	}
	err = Translate(err)
	endSpan(ctx, span, err)
	return err
}

func sendPipeline(ctx context.Context, b Batcher, lead func(q DBTX) error, then []queued) error {
	p := &pipelineLead{b: b, then: then}
	err := lead(p)
	if p.results == nil {
		if err == nil {
			err = errNotPipelined
		}
		return err
	}
	// Read the followers' answers (an error of the lead makes each of them
	// fail too: report the lead's), then the Sync that commits.
	for range then {
		if _, e := p.results.Exec(); err == nil {
			err = e
		}
	}
	if e := p.results.Close(); err == nil {
		err = e
	}
	return err
}

// queued is a statement recorded for a pipeline.
type queued struct {
	sql  string
	args []any
}

// recorder is the DBTX that records the statements a pipeline sends after
// its lead.
type recorder struct{ queued []queued }

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.queued = append(r.queued, queued{sql: sql, args: args})
	return pgconn.CommandTag{}, nil
}

func (r *recorder) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errNotPipelined
}

func (r *recorder) QueryRow(context.Context, string, ...any) pgx.Row {
	return errRow{errNotPipelined}
}

// pipelineLead is the DBTX of a pipeline's lead: its one statement sends
// the batch, and its answer is the batch's first.
type pipelineLead struct {
	b       Batcher
	then    []queued
	results pgx.BatchResults
}

func (p *pipelineLead) send(ctx context.Context, sql string, args []any) bool {
	if p.results != nil {
		return false
	}
	batch := &pgx.Batch{}
	batch.Queue(sql, args...)
	for _, q := range p.then {
		batch.Queue(q.sql, q.args...)
	}
	p.results = p.b.SendBatch(ctx, batch)
	return true
}

func (p *pipelineLead) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !p.send(ctx, sql, args) {
		return pgconn.CommandTag{}, errNotPipelined
	}
	return p.results.Exec()
}

func (p *pipelineLead) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !p.send(ctx, sql, args) {
		return nil, errNotPipelined
	}
	return p.results.Query()
}

func (p *pipelineLead) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !p.send(ctx, sql, args) {
		return errRow{errNotPipelined}
	}
	return p.results.QueryRow()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
