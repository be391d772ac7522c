package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Workload 12: River itself (github.com/riverqueue/river, with its pgx
// driver; only the bench imports it) on the same PostgreSQL, in a schema
// of its own that River's migrator creates: BatchJobs no-op jobs inserted
// in batches (InsertManyFast), then one River client with one queue of
// riverWorkers workers works them with River's defaults (batched fetch,
// batched async completion), jobs/s from its start until every job is
// stored as completed (and the CPU of the benchmark process, which runs
// River's client, and of the cluster per 1,000 jobs). River keeps no history row per attempt and sends no
// heartbeat; workload 13 runs workgraph's batched path beside it so that
// the ratio is measured in one run.

func init() {
	register(workload{id: 12, name: "River: batched fetch and complete, no-op worker (jobs/s)", run: runW12})
}

// riverWorkers is the MaxWorkers of River's queue, the most jobs it holds
// at once. River fetches at most its free slots per fetch (and waits its
// default FetchCooldown, 100 ms, between fetches), so 100 workers would cap
// it near 1,000 jobs/s whatever the database does; 2,000 lets it run at
// the database's pace, as workgraph's 16 agents holding up to 100 leases
// each do.
const riverWorkers = 2000

type noopArgs struct{}

func (noopArgs) Kind() string { return "workgraph_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func runW12(ctx context.Context, e *env) error {
	n := e.cfg.BatchJobs
	pool, err := openPool(ctx, e.url, e.cfg.Pool)
	if err != nil {
		return err
	}
	defer pool.Close()
	schema := "river_bench_" + runID
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create River's schema: %w", err)
	}
	if !e.cfg.Keep {
		defer pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("River's migrations: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	rc, err := river.NewClient(driver, &river.Config{
		Schema:  schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: riverWorkers}},
		Workers: workers,
		Logger:  quiet,
	})
	if err != nil {
		return err
	}

	params := make([]river.InsertManyParams, 0, 1000)
	t0 := time.Now()
	for left := n; left > 0; left -= len(params) {
		params = params[:0]
		for range min(left, cap(params)) {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
		}
		if _, err := rc.InsertManyFast(ctx, params); err != nil {
			return fmt.Errorf("River insert: %w", err)
		}
	}
	insertSecs := time.Since(t0).Seconds()

	count := "SELECT count(*) FROM " + pgx.Identifier{schema, "river_job"}.Sanitize() + " WHERE state = 'completed'"
	start := time.Now()
	cpu := e.cpu.window()
	if err := rc.Start(ctx); err != nil {
		return err
	}
	secs, err := untilCount(ctx, pool, count, n, start)
	cpu.stop()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if serr := rc.Stop(stopCtx); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return err
	}
	rate := float64(n) / secs
	r := Result{Workload: 12, Name: "river", Agents: riverWorkers, Size: int64(n), Seconds: round(secs, 3), Ops: int64(n),
		Rate: round(rate, 1), Unit: "jobs/s", Extra: map[string]float64{"insert_jobs_per_s": round(float64(n)/insertSecs, 1)},
		Note: "River v0.51.2, its pgx driver, default fetch and completer; no history, no heartbeat"}
	cpu.addTo(&r)
	e.add(r)
	e.logf("  River: %d jobs in %.2fs = %.0f jobs/s (inserted at %.0f jobs/s)", n, secs, rate, float64(n)/insertSecs)
	return nil
}

// untilCount polls count (a query answering one number) until it reaches n,
// and returns the seconds since start; it gives up after ten minutes.
func untilCount(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, count string, n int, start time.Time) (float64, error) {
	deadline := start.Add(10 * time.Minute)
	for {
		var got int
		if err := q.QueryRow(ctx, count).Scan(&got); err != nil {
			return 0, err
		}
		if got >= n {
			return time.Since(start).Seconds(), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("only %d of %d done after ten minutes", got, n)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
