package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/uuid"
)

// Workload 4: graph scale. One project grows through the -sizes (1,000,
// 100,000, 1,000,000 items); the same small ready set stays while the rest
// is done or blocked (chains of dependencies hanging off an item held by a
// long lease). At each size one agent claims and releases on the lease
// service for the run time: the claim latency should not depend on the
// size, because the claim reads the partial index of ready items.

func init() {
	register(workload{id: 4, name: "graph scale (claim latency vs items in project)", run: runW4})
}

func (e *env) w4Ready() int {
	if e.cfg.Smoke {
		return 20
	}
	return 100
}

func runW4(ctx context.Context, e *env) error {
	project, err := createProject(ctx, e.pool, e.newProjectName("w4"))
	if err != nil {
		return err
	}
	gate, err := makeGate(ctx, e.pool, project)
	if err != nil {
		return err
	}
	ready := e.w4Ready()
	if err := loadReady(ctx, e.pool, project, ready, 0); err != nil {
		return err
	}
	have := 1 + ready
	sizes := append([]int(nil), e.cfg.Sizes...)
	sort.Ints(sizes)
	var first float64
	for _, size := range sizes {
		if size < have {
			return fmt.Errorf("size %d is smaller than the ready set and gate (%d items)", size, have)
		}
		add := size - have
		e.logf("  loading %d items (half done, half blocked) to reach %d", add, size)
		if err := loadFiller(ctx, e.pool, project, gate, add/2, add-add/2); err != nil {
			return err
		}
		have = size
		if err := analyze(ctx, e.pool); err != nil {
			return err
		}
		r := e.claimLatency(ctx, project, size)
		if first == 0 {
			first = r.Latency["claim"].P50Ms
		}
		if first > 0 {
			r.Extra["p50_vs_smallest"] = round(r.Latency["claim"].P50Ms/first, 2)
		}
		e.add(r)
	}
	return nil
}

// claimLatency measures claim (then release) latency of one agent on the
// lease service.
func (e *env) claimLatency(ctx context.Context, project uuid.UUID, size int) Result {
	rec := loop{
		workers: 1, warmup: e.warmup(), duration: e.duration(),
		iter: claimRelease(serviceAgents(e, project, 1)),
	}.run(ctx)
	r := fromRecorder(4, "claim+release", 1, rec, "claims/s", "claim")
	r.Size = int64(size)
	r.Extra["ready"] = float64(e.w4Ready())
	e.logf("  size=%-8d claim p50=%.2fms p95=%.2fms p99=%.2fms%s", size,
		r.Latency["claim"].P50Ms, r.Latency["claim"].P95Ms, r.Latency["claim"].P99Ms, errSuffix(r))
	return r
}
