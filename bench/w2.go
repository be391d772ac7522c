package main

import (
	"context"
	"fmt"
)

// Workload 2: the item lifecycle over REST. N agents each loop claim ->
// heartbeat -> complete through the real HTTP server (in process, real
// sockets, keep-alive connections), each with its own agent token. "rest"
// uses the project's Go client, which sends a fresh Idempotency-Key with
// every POST (so the server also records each answer); "rest-raw" sends
// the same requests with bare net/http and no key. With -pgbouncer,
// "rest-pgbouncer" is "rest" against a second server whose database URL
// goes through a PgBouncer in transaction mode that the bench starts (its
// listen URL direct), interleaved with the direct one; its
// ratio_to_direct is its throughput over "rest"'s. With workload 1
// selected too, this runs interleaved with it (see runW1).

func init() {
	register(workload{id: 2, name: "lifecycle over REST (claim -> heartbeat -> complete)", run: runW2})
}

func runW2(ctx context.Context, e *env) error {
	if e.selected(1) {
		e.logf("  measured together with workload 1")
		return nil
	}
	for _, n := range e.cfg.Agents {
		if err := e.lifecycleGroup(ctx, n, false, true); err != nil {
			return err
		}
	}
	return e.restCensus(ctx)
}

// restCensus adds to workload 2's results the statements PostgreSQL
// receives per step of the REST lifecycle.
func (e *env) restCensus(ctx context.Context) error {
	census, err := restStatements(ctx, e)
	if err != nil {
		// Only a reading aid: the figures stand without it.
		e.rep.Skipped = append(e.rep.Skipped, fmt.Sprintf("statement census of workload 2: %v", err))
		return nil
	}
	for i := range e.rep.Results {
		r := &e.rep.Results[i]
		if r.Workload != 2 {
			continue
		}
		for k, v := range census[r.Name] {
			r.Extra[k] = v
		}
	}
	return nil
}

// restLifecycle runs n REST agents (Go client) through claim -> heartbeat
// -> complete on a fresh project of server s, for workload 7.
func restLifecycle(ctx context.Context, e *env, s *benchServer, workload, n int) (Result, error) {
	project, err := s.restProject(ctx, e.newProjectName(fmt.Sprintf("w%d", workload)))
	if err != nil {
		return Result{}, err
	}
	agents, err := s.restAgents(ctx, project, n, false)
	if err != nil {
		return Result{}, err
	}
	initial, low, chunk := e.backlogSizes()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	b, err := newBacklog(wctx, initial, low, chunk, func(ctx context.Context, k int) error {
		return loadReady(ctx, e.pool, project, k, 0)
	})
	if err != nil {
		return Result{}, err
	}
	go b.watch(wctx)
	if err := refreshStats(ctx, e.pool); err != nil {
		return Result{}, err
	}
	rs := e.interleave(ctx, []variant{lifecycleVariant(workload, "rest", agents, true, b)})
	if len(rs) == 0 {
		return Result{}, ctx.Err()
	}
	return rs[0], nil
}
