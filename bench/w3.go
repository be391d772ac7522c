package main

import (
	"context"
)

// Workload 3: contended claim latency. Many agents (64) claim from one
// project whose ready backlog is kept at about -backlog items (100,000),
// each completing what it claims; the claim's p50/p99 is the figure. Run
// over REST and, for comparison, on the lease service directly.

func init() {
	register(workload{id: 3, name: "contended claim latency (64 agents, 100,000 ready)", run: runW3})
}

func runW3(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	n := e.cfg.ContendedAgents
	for _, rest := range []bool{true, false} {
		var (
			agents []agent
			name   string
		)
		project, err := s.restProject(ctx, e.newProjectName("w3"))
		if err != nil {
			return err
		}
		if rest {
			name = "rest"
			if agents, err = s.restAgents(ctx, project, n, false); err != nil {
				return err
			}
		} else {
			name = "server-sql"
			agents = serviceAgents(e, project, n)
		}
		size := e.cfg.Backlog
		b, err := newBacklog(ctx, size, size*9/10, size/10, func(ctx context.Context, k int) error {
			return loadReady(ctx, e.pool, project, k, 0)
		})
		if err != nil {
			return err
		}
		if err := analyze(ctx, e.pool); err != nil {
			return err
		}
		r := e.lifecycleRun(ctx, 3, name, agents, false, b)
		r.Primary = "claim"
		r.Size = int64(size)
		e.add(r)
		e.logf("  %-22s claim p50=%.2fms p99=%.2fms", name, r.Latency["claim"].P50Ms, r.Latency["claim"].P99Ms)
	}
	return nil
}
