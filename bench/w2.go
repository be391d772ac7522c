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
// the same requests with bare net/http and no key.

func init() {
	register(workload{id: 2, name: "lifecycle over REST (claim -> heartbeat -> complete)", run: runW2})
}

func runW2(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	for _, raw := range []bool{false, true} {
		for _, n := range e.cfg.Agents {
			r, err := restLifecycle(ctx, e, s, 2, n, raw)
			if err != nil {
				return err
			}
			e.add(r)
		}
	}
	return nil
}

// restLifecycle runs n REST agents through claim -> heartbeat -> complete
// on a fresh project of server s.
func restLifecycle(ctx context.Context, e *env, s *benchServer, workload, n int, raw bool) (Result, error) {
	project, err := s.restProject(ctx, e.newProjectName(fmt.Sprintf("w%d", workload)))
	if err != nil {
		return Result{}, err
	}
	agents, err := s.restAgents(ctx, project, n, raw)
	if err != nil {
		return Result{}, err
	}
	initial, low, chunk := e.backlogSizes()
	b, err := newBacklog(ctx, initial, low, chunk, func(ctx context.Context, n int) error {
		return loadReady(ctx, e.pool, project, n, 0)
	})
	if err != nil {
		return Result{}, err
	}
	name := "rest"
	if raw {
		name = "rest-raw"
	}
	return e.lifecycleRun(ctx, workload, name, agents, true, b), nil
}
