package main

import (
	"context"
	"fmt"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/graph"
)

// Workload 8: plan import. A plan of -plan-items (10,000) items, each
// depending on up to two earlier ones (the previous item and the one at
// half its index), is imported in one transaction: through graph.ImportPlan
// directly, and through POST /v1/projects/{p}/plans on the in-process
// server. Time, and the peak Go heap of this process above its level before
// the import (for the REST variant that includes the server's decoding and
// the client's encoding), and the bytes allocated.

func init() {
	register(workload{id: 8, name: "plan import (10,000 items with dependencies)", run: runW8})
}

func (e *env) w8Reps() int {
	if e.cfg.Smoke {
		return 1
	}
	return 3
}

func planKey(i int) string { return fmt.Sprintf("k%d", i) }

func graphPlan(n int) []graph.PlanItem {
	plan := make([]graph.PlanItem, n)
	for i := range plan {
		plan[i] = graph.PlanItem{Key: planKey(i), Title: fmt.Sprintf("plan item %d", i), DependsOn: planDeps(i)}
	}
	return plan
}

func clientPlan(n int) []client.PlanItem {
	plan := make([]client.PlanItem, n)
	for i := range plan {
		plan[i] = client.PlanItem{Key: planKey(i), Title: fmt.Sprintf("plan item %d", i), DependsOn: planDeps(i)}
	}
	return plan
}

func planDeps(i int) []string {
	switch {
	case i == 0:
		return nil
	case i/2 == i-1 || i/2 == 0:
		return []string{planKey(i - 1)}
	default:
		return []string{planKey(i - 1), planKey(i / 2)}
	}
}

func planEdges(n int) int {
	edges := 0
	for i := 0; i < n; i++ {
		edges += len(planDeps(i))
	}
	return edges
}

func runW8(ctx context.Context, e *env) error {
	n := e.cfg.PlanItems
	gsvc := graph.NewService(e.pool, nil)
	project, err := createProject(ctx, e.pool, e.newProjectName("w8"))
	if err != nil {
		return err
	}
	direct := func(ctx context.Context) error {
		_, err := gsvc.ImportPlan(ctx, project, graphPlan(n), benchPrincipal, false)
		return err
	}
	if err := e.planRuns(ctx, "graph.ImportPlan", n, direct); err != nil {
		return err
	}
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	restProject, err := s.restProject(ctx, e.newProjectName("w8"))
	if err != nil {
		return err
	}
	viaREST := func(ctx context.Context) error {
		_, err := s.admin.ImportPlan(ctx, restProject.String(), client.PlanRequest{Items: clientPlan(n)})
		return asHTTPError(err)
	}
	return e.planRuns(ctx, "POST /plans", n, viaREST)
}

func (e *env) planRuns(ctx context.Context, name string, n int, do func(context.Context) error) error {
	h := newHist()
	var peak, alloc uint64
	for i := 0; i < e.w8Reps(); i++ {
		hs := startHeapSampler()
		t := time.Now()
		err := do(ctx)
		d := time.Since(t)
		p, a := hs.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		h.add(d)
		peak, alloc = max(peak, p), max(alloc, a)
	}
	lat := h.summary()
	e.add(Result{
		Workload: 8, Name: name, Size: int64(n), Ops: int64(h.n), Primary: "import",
		Latency: map[string]Latency{"import": lat},
		Extra: map[string]float64{
			"edges":           float64(planEdges(n)),
			"peak_heap_mb":    round(float64(peak)/(1<<20), 1),
			"allocated_mb":    round(float64(alloc)/(1<<20), 1),
			"items_per_s_p50": round(float64(n)/(lat.P50Ms/1000), 0),
		},
	})
	e.logf("  %-18s %d items, %d edges: p50 %.0f ms, peak heap +%.1f MB, allocated %.1f MB",
		name, n, planEdges(n), lat.P50Ms, float64(peak)/(1<<20), float64(alloc)/(1<<20))
	return nil
}
