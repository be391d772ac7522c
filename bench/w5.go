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
// in one with -fanout-filler more items, done or blocked, the two
// alternating completion by completion (after one unmeasured warm-up
// each): the time and the rows touched should follow D, not the project
// size. Rows touched are the rows of items and leases the completing
// transaction wrote (their xmin is its transaction id); statements are
// counted by a pgx tracer.

func init() {
	register(workload{id: 5, name: "fan-out (complete an item with N dependents)", run: runW5})
}

func (e *env) w5Reps(d int) int {
	switch {
	case e.cfg.Smoke:
		return 2
	case d <= 1000:
		return 30
	default:
		return 6
	}
}

// fanProject is one of workload 5's projects.
type fanProject struct {
	id     uuid.UUID
	filler int
	agent  *serviceAgent
	stmts  *stmtCounter
	close  func()
}

func runW5(ctx context.Context, e *env) error {
	var ps []*fanProject
	defer func() {
		for _, p := range ps {
			p.close()
		}
	}()
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
		a, c, closePool, err := countingService(ctx, e, project)
		if err != nil {
			return err
		}
		ps = append(ps, &fanProject{id: project, filler: filler, agent: a, stmts: c, close: closePool})
	}
	for _, d := range e.cfg.FanOut {
		rs, err := fanOut(ctx, e, ps, d, e.w5Reps(d))
		if err != nil {
			return err
		}
		for _, r := range rs {
			e.add(r)
		}
	}
	return nil
}

// loadHubs loads n hub items, each with d dependents that depend only on
// it. Hubs outrank everything else in the project, so claims take them.
func loadHubs(ctx context.Context, e *env, project uuid.UUID, n, d int) (map[uuid.UUID]bool, error) {
	hubs := make([]uuid.UUID, n)
	isHub := map[uuid.UUID]bool{}
	for i := range hubs {
		hubs[i] = uuid.New()
		isHub[hubs[i]] = true
	}
	if err := copyItems(ctx, e.pool, project, n, func(i int, r *itemRow) {
		r.id, r.priority = hubs[i], 1000
	}); err != nil {
		return nil, err
	}
	deps := make([]uuid.UUID, n*d)
	for i := range deps {
		deps[i] = uuid.New()
	}
	if err := copyItems(ctx, e.pool, project, len(deps), func(i int, r *itemRow) {
		r.id, r.unmet = deps[i], 1
	}); err != nil {
		return nil, err
	}
	err := copyDeps(ctx, e.pool, project, len(deps), func(i int) (uuid.UUID, uuid.UUID) {
		return deps[i], hubs[i/d]
	})
	return isHub, err
}

// fanStats collects one project's completions of one D.
type fanStats struct {
	hist                      *hist
	items, leases, statements []int64
	isHub                     map[uuid.UUID]bool
}

func fanOut(ctx context.Context, e *env, ps []*fanProject, d, reps int) ([]Result, error) {
	stats := make([]*fanStats, len(ps))
	for i, p := range ps {
		isHub, err := loadHubs(ctx, e, p.id, reps+1, d)
		if err != nil {
			return nil, err
		}
		stats[i] = &fanStats{hist: newHist(), isHub: isHub}
	}
	if err := analyze(ctx, e.pool); err != nil {
		return nil, err
	}
	for rep := 0; rep <= reps; rep++ {
		for i, p := range ps {
			if err := completeHub(ctx, e, p, stats[i], rep > 0); err != nil {
				return nil, err
			}
		}
	}
	var out []Result
	for i, p := range ps {
		var items int64
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM items WHERE project_id = $1", p.id).Scan(&items); err != nil {
			return nil, err
		}
		st := stats[i]
		lat := st.hist.summary()
		out = append(out, Result{
			Workload: 5, Name: fmt.Sprintf("complete (+%s filler)", axisLabel(float64(p.filler))),
			Size: int64(d), Ops: int64(reps), Primary: "complete",
			Latency: map[string]Latency{"complete": lat},
			Extra: map[string]float64{
				"project_items":  float64(items),
				"items_touched":  float64(median(st.items)),
				"leases_touched": float64(median(st.leases)),
				"statements":     float64(median(st.statements)),
			},
		})
		e.logf("  dependents=%-6d project=%-8d complete p50=%.2fms max=%.2fms items touched=%d statements=%d",
			d, items, lat.P50Ms, lat.MaxMs, median(st.items), median(st.statements))
	}
	return out, nil
}

// completeHub claims a hub of p and completes it, recording the time, the
// statements and the rows the completion wrote when record is set.
func completeHub(ctx context.Context, e *env, p *fanProject, st *fanStats, record bool) error {
	l, err := p.agent.claim(ctx)
	if err != nil {
		return fmt.Errorf("claim a hub: %w", err)
	}
	if !st.isHub[l.item] {
		return errors.New("the claim did not take a hub item")
	}
	t := time.Now()
	n, err := p.stmts.counted(func() error { return p.agent.complete(ctx, l) })
	d := time.Since(t)
	if err != nil {
		return fmt.Errorf("complete a hub: %w", err)
	}
	if !record {
		return nil
	}
	var it, lt int64
	err = e.pool.QueryRow(ctx, `
		WITH x AS (SELECT xmin FROM leases WHERE project_id = $1 AND id = $2)
		SELECT (SELECT count(*) FROM items, x WHERE items.project_id = $1 AND items.xmin = x.xmin),
		       (SELECT count(*) FROM leases, x WHERE leases.project_id = $1 AND leases.xmin = x.xmin)`,
		p.id, l.id).Scan(&it, &lt)
	if err != nil {
		return err
	}
	st.hist.add(d)
	st.items = append(st.items, it)
	st.leases = append(st.leases, lt)
	st.statements = append(st.statements, n)
	return nil
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
