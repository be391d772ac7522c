package main

import (
	"context"
	"fmt"
	"strings"
)

// Workload 1: the raw SQL limit. N goroutines run, directly over pgx, the
// claim and complete the server itself runs (lease.Service: the same
// transactions and statements as a request, without HTTP), and beside them
// the minimal pair on one table. Variants with a heartbeat between claim
// and complete ("+hb") match workload 2's cycle step for step.
//
// When workload 2 runs too, both are measured together: at each agent
// count every variant of both runs in turn (see interleave), so the ratio
// of workload 2 to workload 1 is not skewed by the machine's load changing
// between them.

func init() {
	register(workload{id: 1, name: "raw SQL limit (server SQL and minimal pair over pgx)", run: runW1})
}

func runW1(ctx context.Context, e *env) error {
	withREST := e.selected(2)
	for _, n := range e.cfg.Agents {
		if err := e.lifecycleGroup(ctx, n, true, withREST); err != nil {
			return err
		}
	}
	// Statements per step, for reading the figures.
	stmts, err := statementsPerStep(ctx, e)
	if err != nil {
		return err
	}
	if withREST {
		if err := e.restCensus(ctx); err != nil {
			return err
		}
	}
	for i := range e.rep.Results {
		r := &e.rep.Results[i]
		switch {
		case r.Workload == 1 && strings.HasPrefix(r.Name, "server-sql"):
			for k, v := range stmts {
				r.Extra[k] = v
			}
		case r.Workload == 1:
			r.Extra["stmts_claim"], r.Extra["stmts_complete"] = 1, 1
			if r.Name == "minimal-pair+hb" {
				r.Extra["stmts_heartbeat"] = 1
			}
		}
	}
	return nil
}

func (e *env) selected(id int) bool {
	for _, w := range e.cfg.Workloads {
		if w == id {
			return true
		}
	}
	return false
}

// backlogSizes returns the initial backlog, low-water mark and refill
// chunk of a lifecycle run.
func (e *env) backlogSizes() (initial, low, chunk int) {
	if e.cfg.Smoke {
		// Enough for a whole smoke run even when the refill lags: the
		// minimal pair drains a few thousand items a second.
		return 5_000, 2_500, 5_000
	}
	return 20_000, 10_000, 20_000
}

// lifecycleGroup measures, interleaved, workload 1's variants (direct) and
// workload 2's (REST) at n agents.
func (e *env) lifecycleGroup(ctx context.Context, n int, direct, rest bool) error {
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	initial, low, chunk := e.backlogSizes()
	var vs []variant
	watch := func(load func(ctx context.Context, k int) error) (*backlog, error) {
		b, err := newBacklog(gctx, initial, low, chunk, load)
		if err != nil {
			return nil, err
		}
		go b.watch(gctx)
		return b, nil
	}
	if direct {
		if err := setupMinimal(ctx, e.pool); err != nil {
			return fmt.Errorf("minimal pair table: %w", err)
		}
		defer dropMinimal(context.WithoutCancel(ctx), e.pool)
		b, err := watch(func(ctx context.Context, k int) error { return loadMinimal(ctx, e.pool, k) })
		if err != nil {
			return err
		}
		agents := make([]agent, n)
		for i := range agents {
			agents[i] = &minimalAgent{pool: e.pool, worker: fmt.Sprintf("bench-%d", i)}
		}
		vs = append(vs, lifecycleVariant(1, "minimal-pair", agents, false, b), lifecycleVariant(1, "minimal-pair+hb", agents, true, b))

		project, err := createProject(ctx, e.pool, e.newProjectName("w1"))
		if err != nil {
			return err
		}
		b, err = watch(func(ctx context.Context, k int) error { return loadReady(ctx, e.pool, project, k, 0) })
		if err != nil {
			return err
		}
		agents = serviceAgents(e, project, n)
		vs = append(vs, lifecycleVariant(1, "server-sql", agents, false, b), lifecycleVariant(1, "server-sql+hb", agents, true, b))
		// The same transactions with the event triggers off: what the
		// event log costs without HTTP in front (bench/events_off.go).
		off := lifecycleVariant(1, "server-sql+hb-events-off", agents, true, b)
		off.before, off.after = e.eventsOff, e.eventsOn
		vs = append(vs, off)
	}
	if rest {
		s, err := e.inProcessServer(ctx)
		if err != nil {
			return err
		}
		for _, name := range []string{"rest", "rest-raw", "rest-events-off"} {
			project, err := s.restProject(ctx, e.newProjectName("w2"))
			if err != nil {
				return err
			}
			agents, err := s.restAgents(ctx, project, n, name == "rest-raw")
			if err != nil {
				return err
			}
			b, err := watch(func(ctx context.Context, k int) error { return loadReady(ctx, e.pool, project, k, 0) })
			if err != nil {
				return err
			}
			v := lifecycleVariant(2, name, agents, true, b)
			if name == "rest-events-off" {
				v.before, v.after = e.eventsOff, e.eventsOn
			}
			vs = append(vs, v)
		}
		if e.cfg.PgBouncer {
			v, ok, err := e.pooledVariant(ctx, n, watch)
			if err != nil {
				return err
			}
			if ok {
				vs = append(vs, v)
			}
		}
	}
	if err := refreshStats(ctx, e.pool); err != nil {
		return err
	}
	for _, r := range e.interleave(ctx, vs) {
		e.add(r)
	}
	return nil
}

// lifecycleVariant runs agents through claim [-> heartbeat] -> complete,
// taking items from b.
func lifecycleVariant(workload int, name string, agents []agent, heartbeat bool, b *backlog) variant {
	return variant{
		workload: workload, name: name, workers: len(agents),
		iter: lifecycle(agents, heartbeat, b), unit: "items/s", primary: "cycle",
	}
}

func errSuffix(r Result) string {
	if len(r.Errors) == 0 {
		return ""
	}
	return fmt.Sprintf("  errors=%v", r.Errors)
}
