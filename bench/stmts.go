package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/lease"
)

// stmtCounter counts the statements sent to PostgreSQL (BEGIN and COMMIT
// included, and each statement of a pipelined batch) and the round trips
// (a statement sent alone, or a batch): what an operation costs.
type stmtCounter struct{ db.StatementCounter }

// counted runs fn and returns how many statements it sent.
func (c *stmtCounter) counted(fn func() error) (int64, error) {
	n, _, err := c.countedTrips(fn)
	return n, err
}

// countedTrips runs fn and returns how many statements it sent and in how
// many round trips.
func (c *stmtCounter) countedTrips(fn func() error) (stmts, trips int64, err error) {
	n0, t0 := c.Counts()
	err = fn()
	n1, t1 := c.Counts()
	return n1 - n0, t1 - t0, err
}

// countingPool opens a one-connection pool whose statements c counts.
func countingPool(ctx context.Context, url string, c *stmtCounter) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = c
	return pgxpool.NewWithConfig(ctx, cfg)
}

// statementsPerStep counts the statements of one claim, heartbeat and
// complete of the server's lease service, and of the minimal pair.
func statementsPerStep(ctx context.Context, e *env) (map[string]float64, error) {
	var c stmtCounter
	pool, err := countingPool(ctx, e.url, &c)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	project, err := createProject(ctx, e.pool, e.newProjectName("stmts"))
	if err != nil {
		return nil, err
	}
	if err := loadReady(ctx, e.pool, project, 1, 0); err != nil {
		return nil, err
	}
	a := &serviceAgent{svc: lease.NewService(pool, nil, lease.Config{}), project: project, worker: "bench-stmts"}
	out := map[string]float64{}
	var l heldLease
	steps := []struct {
		name string
		fn   func() error
	}{
		{"stmts_claim", func() (err error) { l, err = a.claim(ctx); return err }},
		{"stmts_heartbeat", func() error { return a.heartbeat(ctx, l) }},
		{"stmts_complete", func() error { return a.complete(ctx, l) }},
	}
	for _, s := range steps {
		n, trips, err := c.countedTrips(s.fn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		out[s.name] = float64(n)
		out["trips_"+strings.TrimPrefix(s.name, "stmts_")] = float64(trips)
	}
	return out, nil
}

// countingService is a lease service on a counting one-connection pool.
func countingService(ctx context.Context, e *env, project uuid.UUID) (*serviceAgent, *stmtCounter, func(), error) {
	c := &stmtCounter{}
	pool, err := countingPool(ctx, e.url, c)
	if err != nil {
		return nil, nil, nil, err
	}
	a := &serviceAgent{svc: lease.NewService(pool, nil, lease.Config{}), project: project, worker: "bench-fanout"}
	return a, c, pool.Close, nil
}
