package main

import (
	"context"
	"fmt"
	"time"
)

// Workload 6: heartbeat capacity. -leases (1,000) live leases are spread
// over the agents (64), which renew theirs round-robin as fast as the
// server answers: heartbeats/s sustained, and their latency. Over REST and
// on the lease service directly.

func init() {
	register(workload{id: 6, name: "heartbeat capacity (1,000 live leases)", run: runW6})
}

func runW6(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	n, total := e.cfg.ContendedAgents, e.cfg.Leases
	if n > total {
		n = total
	}
	var vs []variant
	for _, rest := range []bool{true, false} {
		project, err := s.restProject(ctx, e.newProjectName("w6"))
		if err != nil {
			return err
		}
		if err := loadReady(ctx, e.pool, project, total, 0); err != nil {
			return err
		}
		if err := refreshStats(ctx, e.pool); err != nil {
			return err
		}
		name, agents, err := s.variantAgents(ctx, e, project, n, rest)
		if err != nil {
			return err
		}
		// Agent i holds leases i, i+n, i+2n, ...
		held := make([][]heldLease, n)
		for i := 0; i < total; i++ {
			l, err := agents[i%n].claim(ctx)
			if err != nil {
				return fmt.Errorf("claim lease %d: %w", i, err)
			}
			held[i%n] = append(held[i%n], l)
		}
		next := make([]int, n)
		vs = append(vs, variant{
			workload: 6, name: name, workers: n, size: int64(total), unit: "heartbeats/s", primary: "heartbeat",
			iter: func(ctx context.Context, w int, rec *recorder) error {
				l := held[w][next[w]%len(held[w])]
				next[w]++
				t := time.Now()
				if err := agents[w].heartbeat(ctx, l); err != nil {
					return err
				}
				rec.observe("heartbeat", t)
				rec.done()
				return nil
			},
		})
	}
	for _, r := range e.interleave(ctx, vs) {
		e.add(r)
	}
	return nil
}
