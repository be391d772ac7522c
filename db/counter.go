package db

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// StatementCounter is a pgx tracer (pgx.ConnConfig.Tracer) that counts
// what a connection sends to PostgreSQL: the statements sent one by one
// (Alone, BEGIN and COMMIT included), the statements of its pipelined
// batches (Batched), and its round trips (Trips: a statement sent alone,
// or a whole batch). The benchmark's statement census and the tests that
// hold an operation to its number of statements read it.
type StatementCounter struct {
	Alone, Batched, Trips atomic.Int64
}

// Counts returns the statements sent so far (alone and batched) and the
// round trips.
func (c *StatementCounter) Counts() (stmts, trips int64) {
	return c.Alone.Load() + c.Batched.Load(), c.Trips.Load()
}

// TraceQueryStart counts a statement sent alone, and its round trip.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.Alone.Add(1)
	c.Trips.Add(1)
	return ctx
}

// TraceQueryEnd is part of pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch's round trip.
func (c *StatementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.Trips.Add(1)
	return ctx
}

// TraceBatchQuery counts a statement of a batch.
func (c *StatementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.Batched.Add(1)
}

// TraceBatchEnd is part of pgx.BatchTracer.
func (c *StatementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
