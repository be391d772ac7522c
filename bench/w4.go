package main

import (
	"context"
	"sort"
)

// Workload 4: graph scale. One project per size (1,000, 100,000, 1,000,000
// items): the same small ready set (100 items) in each, the rest done or
// blocked (chains of dependencies hanging off an item held by a long
// lease). One agent claims and releases on the lease service, the sizes
// interleaved in rounds; the claim latency should not depend on the size,
// because the claim reads the partial index of ready items.

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
	sizes := append([]int(nil), e.cfg.Sizes...)
	sort.Ints(sizes)
	ready := e.w4Ready()
	var vs []variant
	for _, size := range sizes {
		project, err := createProject(ctx, e.pool, e.newProjectName("w4"))
		if err != nil {
			return err
		}
		gate, err := makeGate(ctx, e.pool, project)
		if err != nil {
			return err
		}
		r := min(ready, size-1)
		if err := loadReady(ctx, e.pool, project, r, 0); err != nil {
			return err
		}
		add := size - 1 - r
		e.logf("  project of %d items: %d ready, %d done, %d blocked", size, r, add/2, add-add/2)
		if err := loadFiller(ctx, e.pool, project, gate, add/2, add-add/2); err != nil {
			return err
		}
		vs = append(vs, variant{
			workload: 4, name: "claim+release", workers: 1, size: int64(size),
			iter: claimRelease(serviceAgents(e, project, 1)), unit: "claims/s", primary: "claim",
			done: func(res *Result) { res.Extra["ready"] = float64(r) },
		})
	}
	if err := analyze(ctx, e.pool); err != nil {
		return err
	}
	rs := e.interleave(ctx, vs)
	for i := range rs {
		if p0 := rs[0].Latency["claim"].P50Ms; p0 > 0 {
			rs[i].Extra["p50_vs_smallest"] = round(rs[i].Latency["claim"].P50Ms/p0, 2)
		}
		e.add(rs[i])
	}
	return nil
}
