package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
)

// Workload 5: fan-out. Completing an item with D dependents (10,000 vs 10)
// updates the item, its lease and its D dependents, in one transaction.
// Each D runs in a small project (just the hubs and their dependents) and
// in one with -fanout-filler more items, done or blocked: the time and the
// rows touched should follow D, not the project size. Rows touched are the
// rows of items and leases the completing transaction wrote (their xmin is
// its transaction id).

func init() {
	register(workload{id: 5, name: "fan-out (complete an item with N dependents)", run: runW5})
}

func (e *env) w5Reps(d int) int {
	switch {
	case e.cfg.Smoke:
		return 2
	case d <= 1000:
		return 20
	default:
		return 5
	}
}

func runW5(ctx context.Context, e *env) error {
	for _, filler := range []int{0, e.cfg.FanOutFiller} {
		project, err := createProject(ctx, e.pool, e.newProjectName("w5"))
		if err != nil {
			return err
		}
		if filler > 0 {
			gate, err := makeGate(ctx, e.pool, project)
			if err != nil {
				return err
			}
			if err := loadFiller(ctx, e.pool, project, gate, filler/2, filler-filler/2); err != nil {
				return err
			}
		}
		for _, d := range e.cfg.FanOut {
			r, err := fanOut(ctx, e, project, filler, d, e.w5Reps(d))
			if err != nil {
				return err
			}
			e.add(r)
		}
	}
	return nil
}

func fanOut(ctx context.Context, e *env, project uuid.UUID, filler, d, reps int) (Result, error) {
	hubs := make([]uuid.UUID, reps)
	isHub := map[uuid.UUID]bool{}
	for i := range hubs {
		hubs[i] = uuid.New()
		isHub[hubs[i]] = true
	}
	// Hubs outrank everything else in the project, so the claim takes them.
	if err := copyItems(ctx, e.pool, project, reps, func(i int, r *itemRow) {
		r.id, r.priority = hubs[i], 1000
	}); err != nil {
		return Result{}, err
	}
	deps := make([]uuid.UUID, reps*d)
	for i := range deps {
		deps[i] = uuid.New()
	}
	if err := copyItems(ctx, e.pool, project, len(deps), func(i int, r *itemRow) {
		r.id, r.unmet = deps[i], 1
	}); err != nil {
		return Result{}, err
	}
	if err := copyDeps(ctx, e.pool, project, len(deps), func(i int) (uuid.UUID, uuid.UUID) {
		return deps[i], hubs[i/d]
	}); err != nil {
		return Result{}, err
	}
	if err := analyze(ctx, e.pool); err != nil {
		return Result{}, err
	}
	var items int64
	if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM items WHERE project_id = $1", project).Scan(&items); err != nil {
		return Result{}, err
	}
	a, stmts, closePool, err := countingService(ctx, e, project)
	if err != nil {
		return Result{}, err
	}
	defer closePool()
	h := newHist()
	var touched, leaseRows, statements []int64
	for i := 0; i < reps; i++ {
		l, err := a.claim(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("claim a hub: %w", err)
		}
		if !isHub[l.item] {
			return Result{}, errors.New("the claim did not take a hub item")
		}
		t := time.Now()
		n, err := stmts.counted(func() error { return a.complete(ctx, l) })
		if err != nil {
			return Result{}, fmt.Errorf("complete a hub: %w", err)
		}
		h.add(time.Since(t))
		statements = append(statements, n)
		var it, lt int64
		err = e.pool.QueryRow(ctx, `
			WITH x AS (SELECT xmin FROM leases WHERE project_id = $1 AND id = $2)
			SELECT (SELECT count(*) FROM items, x WHERE items.project_id = $1 AND items.xmin = x.xmin),
			       (SELECT count(*) FROM leases, x WHERE leases.project_id = $1 AND leases.xmin = x.xmin)`,
			project, l.id).Scan(&it, &lt)
		if err != nil {
			return Result{}, err
		}
		touched = append(touched, it)
		leaseRows = append(leaseRows, lt)
	}
	lat := h.summary()
	r := Result{
		Workload: 5, Name: fmt.Sprintf("complete (+%s filler)", axisLabel(float64(filler))),
		Size: int64(d), Ops: int64(reps), Primary: "complete",
		Latency: map[string]Latency{"complete": lat},
		Extra: map[string]float64{
			"project_items":  float64(items),
			"items_touched":  float64(median(touched)),
			"leases_touched": float64(median(leaseRows)),
			"statements":     float64(median(statements)),
		},
	}
	e.logf("  dependents=%-6d project=%-8d complete p50=%.2fms max=%.2fms items touched=%d",
		d, items, lat.P50Ms, lat.MaxMs, median(touched))
	return r, nil
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
