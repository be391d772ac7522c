package main

import (
	"context"
	"fmt"
)

// Workload 1: the raw SQL limit. N goroutines run, directly over pgx, the
// claim and complete the server itself runs (lease.Service, the same
// transactions and statements), and beside them the minimal pair on one
// table. Variants with a heartbeat between claim and complete match
// workload 2's cycle step for step.

func init() {
	register(workload{id: 1, name: "raw SQL limit (server SQL and minimal pair over pgx)", run: runW1})
}

func runW1(ctx context.Context, e *env) error {
	for _, hb := range []bool{false, true} {
		for _, n := range e.cfg.Agents {
			r, err := runMinimal(ctx, e, n, hb)
			if err != nil {
				return err
			}
			e.add(r)
			if serverSQL != nil {
				r, err := serverSQL(ctx, e, n, hb)
				if err != nil {
					return err
				}
				e.add(r)
			}
		}
	}
	if serverSQL == nil {
		e.rep.Skipped = append(e.rep.Skipped, "workload 1: server SQL variant (package lease not available)")
	}
	return nil
}

// serverSQL runs workload 1's server-SQL variant; nil until wired.
var serverSQL func(ctx context.Context, e *env, agents int, heartbeat bool) (Result, error)

// backlogSizes returns the initial backlog, low-water mark and refill
// chunk of a lifecycle run.
func (e *env) backlogSizes() (initial, low, chunk int) {
	if e.cfg.Smoke {
		return 2_000, 1_000, 2_000
	}
	return 20_000, 10_000, 20_000
}

func runMinimal(ctx context.Context, e *env, n int, heartbeat bool) (Result, error) {
	if err := setupMinimal(ctx, e.pool); err != nil {
		return Result{}, fmt.Errorf("minimal pair table: %w", err)
	}
	defer dropMinimal(context.WithoutCancel(ctx), e.pool)
	initial, low, chunk := e.backlogSizes()
	b, err := newBacklog(ctx, initial, low, chunk, func(ctx context.Context, n int) error {
		return loadMinimal(ctx, e.pool, n)
	})
	if err != nil {
		return Result{}, err
	}
	agents := make([]agent, n)
	for i := range agents {
		agents[i] = &minimalAgent{pool: e.pool, worker: fmt.Sprintf("bench-%d", i)}
	}
	name := "minimal-pair"
	if heartbeat {
		name += "+hb"
	}
	return e.lifecycleRun(ctx, 1, name, agents, heartbeat, b), nil
}

// lifecycleRun runs agents through claim [-> heartbeat] -> complete for
// the configured time, refilling b.
func (e *env) lifecycleRun(ctx context.Context, workload int, name string, agents []agent, heartbeat bool, b *backlog) Result {
	wctx, stop := context.WithCancel(ctx)
	go b.watch(wctx)
	rec := loop{
		workers: len(agents), warmup: e.warmup(), duration: e.duration(),
		iter: lifecycle(agents, heartbeat, b),
	}.run(ctx)
	stop()
	r := fromRecorder(workload, name, len(agents), rec, "items/s", "cycle")
	if n := b.refills.Load(); n > 0 {
		r.Extra["backlog_refills"] = float64(n)
	}
	e.logf("  %-22s agents=%-3d %8.1f items/s  cycle p50=%.2fms p99=%.2fms%s",
		name, len(agents), r.Rate, r.Latency["cycle"].P50Ms, r.Latency["cycle"].P99Ms, errSuffix(r))
	return r
}

func errSuffix(r Result) string {
	if len(r.Errors) == 0 {
		return ""
	}
	return fmt.Sprintf("  errors=%v", r.Errors)
}
