package main

import (
	"context"
)

// Workload 3: contended claim latency. Many agents (64) claim from one
// project whose ready backlog is kept at about -backlog items (100,000),
// each completing what it claims; the claim's p50/p99 is the figure. Over
// REST and, interleaved with it, on the lease service directly.

func init() {
	register(workload{id: 3, name: "contended claim latency (64 agents, 100,000 ready)", run: runW3})
}

func runW3(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	n, size := e.cfg.ContendedAgents, e.cfg.Backlog
	var vs []variant
	for _, rest := range []bool{true, false} {
		project, err := s.restProject(ctx, e.newProjectName("w3"))
		if err != nil {
			return err
		}
		name, agents, err := s.variantAgents(ctx, e, project, n, rest)
		if err != nil {
			return err
		}
		b, err := newBacklog(wctx, size, size*9/10, size/10, func(ctx context.Context, k int) error {
			return loadReady(ctx, e.pool, project, k, 0)
		})
		if err != nil {
			return err
		}
		go b.watch(wctx)
		v := lifecycleVariant(3, name, agents, false, b)
		v.primary, v.size = "claim", int64(size)
		vs = append(vs, v)
	}
	if err := analyze(ctx, e.pool); err != nil {
		return err
	}
	for _, r := range e.interleave(ctx, vs) {
		e.add(r)
	}
	return nil
}
