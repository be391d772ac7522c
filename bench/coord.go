package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The coordination benchmark (workloads 22 to 24, docs/benchmarks.md):
// what a team choosing a coordinator asks of it, measured so that the same
// scenario can be run against another system.
//
//   - 22, double grants under an N-way race: -coord-claimers (64) claimers
//     take -coord-claims (1,000,000; 500 in a smoke run) leases of a
//     few items (one item per 10 claims), releasing most at once and
//     abandoning one in 20 (a 1 s lease nobody renews, ended by later
//     claims); then the stored history is checked: two leases of one item
//     that overlap in time, or one epoch granted twice, must be 0.
//   - 23, an abandoned item's return to circulation: -coord-abandoned (200)
//     items are claimed by workers that then die (never heartbeat); their
//     leases run out -coord-lease (2 s) later, 10 ms apart; 16 agents wait for work (ClaimWait with
//     a notifier) while a sweeper runs every -coord-sweep (1 s). Measured
//     from the stored history: the next grant's acquisition minus the
//     abandoned lease's expiry, p50/p99, beside the lease length.
//   - 24, claim latency at -coord-ready (100,000) ready items with
//     -coord-live (1,000) live leases: 16 agents claim and release; then
//     the same agents claim by a label that only rareLabelItems items
//     carry, last in the claim order (a fleet's specialised workers),
//     and workers that offer no capabilities claim in a project whose
//     first restrictedItems (10,000) ready items require one (a GPU
//     fleet's backlog), and workers that offer another capability (a TPU)
//     claim in the same project, beside the plain claim in the same
//     interleaved run.

func init() {
	register(workload{id: 22, name: "coordination: double grants under a 64-way race", run: runW22})
	register(workload{id: 23, name: "coordination: abandoned item back in circulation", run: runW23})
	register(workload{id: 24, name: "coordination: claim latency at 100k ready, 1k live", run: runW24})
}

func runW22(ctx context.Context, e *env) error {
	claims, claimers := e.cfg.CoordClaims, e.cfg.CoordClaimers
	if e.cfg.Smoke {
		claims, claimers = min(claims, 500), min(claimers, 8)
	}
	project, err := createProject(ctx, e.pool, e.newProjectName("w22"))
	if err != nil {
		return err
	}
	items := max(claims/10, claimers)
	if err := loadReady(ctx, e.pool, project, items, 0); err != nil {
		return err
	}
	if err := refreshStats(ctx, e.pool); err != nil {
		return err
	}
	svc := lease.NewService(e.pool, nil, lease.Config{MinTTL: time.Second, MaxExpiries: 1 << 30})
	var taken, abandoned, empty atomic.Int64
	errs := make(chan error, claimers)
	var wg sync.WaitGroup
	t0 := time.Now()
	lat := newHist()
	var latMu sync.Mutex
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 22))
			h := newHist()
			defer func() { latMu.Lock(); lat.merge(h); latMu.Unlock() }()
			req := lease.ClaimRequest{Worker: fmt.Sprintf("racer-%d", c), TTL: time.Second}
			for taken.Load() < int64(claims) && ctx.Err() == nil {
				t := time.Now()
				cl, err := svc.Claim(ctx, project, req)
				if errors.Is(err, lease.ErrNothingReady) {
					empty.Add(1)
					time.Sleep(5 * time.Millisecond) // every item abandoned: their leases run out
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				h.add(time.Since(t))
				taken.Add(1)
				if rng.IntN(20) == 0 {
					abandoned.Add(1)
					continue
				}
				if _, err := svc.Release(ctx, project, lease.Fence{LeaseID: cl.Lease.ID, Epoch: cl.Lease.Epoch}, "bench"); err != nil &&
					!errors.Is(err, wgerr.LeaseLost) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	select {
	case err := <-errs:
		return err
	default:
	}
	overlaps, twice, total, err := doubleGrants(ctx, e, project)
	if err != nil {
		return err
	}
	r := Result{
		Workload: 22, Name: fmt.Sprintf("%d-way race", claimers), Agents: claimers, Size: total,
		Seconds: round(secs, 3), Ops: taken.Load(), Unit: "claims/s", Primary: "claim",
		Rate:    round(float64(taken.Load())/secs, 1),
		Latency: map[string]Latency{"claim": lat.summary()},
		Extra: map[string]float64{
			"double_grants_overlap": float64(overlaps), "double_grants_epoch": float64(twice),
			"leases_checked": float64(total), "items": float64(items), "abandoned": float64(abandoned.Load()),
		},
	}
	e.logf("  W22 %d claims by %d claimers (%d abandoned) in %.1fs: %d leases checked, %d overlapping, %d epochs granted twice",
		taken.Load(), claimers, abandoned.Load(), secs, total, overlaps, twice)
	e.add(r)
	if overlaps+twice > 0 {
		return fmt.Errorf("double grants: %d overlapping leases, %d epochs granted twice", overlaps, twice)
	}
	return nil
}

// doubleGrants checks the project's stored history: leases of one item,
// in epoch order, each acquired no earlier than the previous one ended (a
// lease not ended followed by another overlaps it), and each (item, epoch)
// granted once.
func doubleGrants(ctx context.Context, e *env, project uuid.UUID) (overlaps, twice, total int64, err error) {
	err = e.pool.QueryRow(ctx, `
		WITH l AS (
		    SELECT acquired_at, ended_at,
		           lag(ended_at) OVER w AS prev_end, lag(id) OVER w AS prev
		    FROM leases WHERE project_id = $1
		    WINDOW w AS (PARTITION BY item_id ORDER BY epoch, acquired_at)
		)
		SELECT count(*) FILTER (WHERE prev IS NOT NULL AND (prev_end IS NULL OR prev_end > acquired_at)),
		       count(*)
		FROM l`, project).Scan(&overlaps, &total)
	if err != nil {
		return 0, 0, 0, err
	}
	err = e.pool.QueryRow(ctx, `
		SELECT coalesce(sum(n - 1), 0) FROM (
		    SELECT count(*) AS n FROM leases WHERE project_id = $1 GROUP BY item_id, epoch HAVING count(*) > 1) d`,
		project).Scan(&twice)
	return overlaps, twice, total, err
}

func runW23(ctx context.Context, e *env) error {
	n, ttl, sweep := e.cfg.CoordAbandoned, time.Duration(e.cfg.CoordLease), time.Duration(e.cfg.CoordSweep)
	if e.cfg.Smoke {
		n = min(n, 20)
	}
	project, err := createProject(ctx, e.pool, e.newProjectName("w23"))
	if err != nil {
		return err
	}
	if err := loadReady(ctx, e.pool, project, n, 0); err != nil {
		return err
	}
	svc := lease.NewService(e.pool, nil, lease.Config{MinTTL: time.Second, MaxExpiries: 1 << 30})
	// The doomed leases are granted long, then set to run out ttl from now,
	// 10 ms apart: on a loaded machine granting 200 leases can take longer
	// than one lease lasts, and a lease that expired while the others were
	// still being granted would be taken again by a doomed worker.
	for i := range n {
		if _, err := svc.Claim(ctx, project, lease.ClaimRequest{Worker: fmt.Sprintf("doomed-%d", i), TTL: time.Hour}); err != nil {
			return fmt.Errorf("abandoned claim %d: %w", i, err)
		}
	}
	if _, err := e.pool.Exec(ctx, `
		UPDATE leases l SET expires_at = now() + $2 * interval '1 millisecond' + d.n * interval '10 milliseconds'
		FROM (SELECT id, row_number() OVER (ORDER BY acquired_at) AS n FROM leases
		      WHERE project_id = $1 AND ended_at IS NULL) d
		WHERE l.project_id = $1 AND l.id = d.id`, project, ttl.Milliseconds()); err != nil {
		return err
	}
	// The doomed workers die here: nobody heartbeats their leases.
	nt := lease.NewNotifier(e.pool, nil)
	nt.Start(ctx)
	defer nt.Stop()
	<-nt.Listening()
	sw := lease.NewSweeper(svc, sweep, nil)
	sw.Start(ctx)
	defer sw.Stop()
	var got atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, ttl+time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for a := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := lease.ClaimRequest{Worker: fmt.Sprintf("rescuer-%d", a)}
			for got.Load() < int64(n) && ctx.Err() == nil {
				c, err := svc.ClaimWait(ctx, project, req, 2*time.Second, nt)
				if err != nil {
					continue
				}
				got.Add(1)
				svc.Complete(ctx, project, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, nil, nil)
			}
		}()
	}
	wg.Wait()
	if got.Load() < int64(n) {
		return fmt.Errorf("only %d of %d abandoned items were granted again within a minute", got.Load(), n)
	}
	rows, err := e.pool.Query(ctx, `
		SELECT extract(epoch FROM (b.acquired_at - a.expires_at)) * 1000
		FROM leases a JOIN leases b ON b.project_id = a.project_id AND b.item_id = a.item_id AND b.epoch = a.epoch + 1
		WHERE a.project_id = $1 AND a.outcome = 'expired'`, project)
	if err != nil {
		return err
	}
	var ms []float64
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		ms = append(ms, v)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ms) == 0 {
		return errors.New("no expired lease was followed by a grant")
	}
	sort.Float64s(ms)
	q := func(p float64) float64 { return round(ms[min(len(ms)-1, int(p*float64(len(ms))))], 1) }
	r := Result{
		Workload: 23, Name: "expiry to next grant", Agents: 16, Size: int64(n), Ops: int64(len(ms)), Unit: "items",
		Primary: "return", Latency: map[string]Latency{"return": {P50Ms: q(0.5), P99Ms: q(0.99), MaxMs: ms[len(ms)-1]}},
		Extra: map[string]float64{"lease_ms": float64(ttl.Milliseconds()), "sweep_interval_ms": float64(sweep.Milliseconds()),
			"return_p50_over_lease": round(q(0.5)/float64(ttl.Milliseconds()), 3),
			"return_p99_over_lease": round(q(0.99)/float64(ttl.Milliseconds()), 3)},
	}
	e.logf("  W23 %d abandoned items, lease %s, sweeper every %s: expiry -> next grant p50=%.1fms p99=%.1fms max=%.1fms",
		len(ms), ttl, sweep, q(0.5), q(0.99), ms[len(ms)-1])
	e.add(r)
	return nil
}

// rareLabel is carried by rareLabelItems of workload 24's items only.
// restrictedItems items of workload 24's fleet project require
// restrictedCapability, which none of its claimers offers.
const (
	rareLabel            = "w24-rare"
	rareLabelItems       = 64
	restrictedCapability = "w24-gpu"
	restrictedItems      = 10000
	// otherCapability is required by otherItems items of the fleet
	// project, after its restricted items in the claim order: workers
	// that offer it (and not restrictedCapability) claim past the backlog
	// they cannot take.
	otherCapability = "w24-tpu"
	otherItems      = 1000
)

func runW24(ctx context.Context, e *env) error {
	ready, live := e.cfg.CoordReady, e.cfg.CoordLive
	if e.cfg.Smoke {
		ready, live = min(ready, 2000), min(live, 50)
	}
	project, err := createProject(ctx, e.pool, e.newProjectName("w24"))
	if err != nil {
		return err
	}
	if err := loadReady(ctx, e.pool, project, ready+live, 0); err != nil {
		return err
	}
	// The rare label's items, below every other's priority: last in the
	// claim order.
	if err := copyItems(ctx, e.pool, project, rareLabelItems, func(i int, r *itemRow) {
		r.id, r.priority, r.labels = uuid.New(), -1, []string{rareLabel}
	}); err != nil {
		return err
	}
	svc := lease.NewService(e.pool, nil, lease.Config{})
	for i := range live {
		if _, err := svc.Claim(ctx, project, lease.ClaimRequest{Worker: fmt.Sprintf("holder-%d", i%64), TTL: time.Hour}); err != nil {
			return err
		}
	}
	if err := refreshStats(ctx, e.pool); err != nil {
		return err
	}
	// A fleet's project: restrictedItems items that require a capability
	// (a GPU), first in the claim order, then items that require nothing,
	// which workers offering no capabilities claim.
	restricted := restrictedItems
	if e.cfg.Smoke {
		restricted = min(restricted, 500)
	}
	fleet, err := createProject(ctx, e.pool, e.newProjectName("w24-fleet"))
	if err != nil {
		return err
	}
	if err := copyItems(ctx, e.pool, fleet, restricted, func(i int, r *itemRow) {
		r.id, r.priority, r.requires = uuid.New(), 1, []string{restrictedCapability}
	}); err != nil {
		return err
	}
	if err := loadReady(ctx, e.pool, fleet, 1000, 0); err != nil {
		return err
	}
	other := otherItems
	if e.cfg.Smoke {
		other = min(other, 50)
	}
	if err := copyItems(ctx, e.pool, fleet, other, func(i int, r *itemRow) {
		r.id, r.priority, r.requires = uuid.New(), 0, []string{otherCapability}
	}); err != nil {
		return err
	}
	if err := refreshStats(ctx, e.pool); err != nil {
		return err
	}
	const agents = 16
	vs := []variant{{
		workload: 24, name: fmt.Sprintf("claim at %d ready, %d live", ready, live), workers: agents, size: int64(ready),
		unit: "claims/s", primary: "claim",
		iter: func(ctx context.Context, w int, rec *recorder) error {
			t := time.Now()
			c, err := svc.Claim(ctx, project, lease.ClaimRequest{Worker: fmt.Sprintf("w24-%d", w), TTL: time.Minute})
			if errors.Is(err, lease.ErrNothingReady) {
				return errEmpty
			}
			if err != nil {
				return err
			}
			rec.observe("claim", t)
			rec.done()
			_, err = svc.Release(ctx, project, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "bench")
			return err
		},
	}, {
		workload: 24, name: fmt.Sprintf("claim by a rare label at %d ready, %d live", ready, live), workers: agents, size: int64(ready),
		unit: "claims/s", primary: "claim",
		iter: func(ctx context.Context, w int, rec *recorder) error {
			t := time.Now()
			c, err := svc.Claim(ctx, project, lease.ClaimRequest{Worker: fmt.Sprintf("w24-%d", w), TTL: time.Minute, Labels: []string{rareLabel}})
			if errors.Is(err, lease.ErrNothingReady) {
				return errEmpty
			}
			if err != nil {
				return err
			}
			if len(c.Item.Labels) != 1 || c.Item.Labels[0] != rareLabel {
				return fmt.Errorf("claim by %s got item %s labelled %v", rareLabel, c.Item.ID, c.Item.Labels)
			}
			rec.observe("claim", t)
			rec.done()
			_, err = svc.Release(ctx, project, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "bench")
			return err
		},
	}, {
		workload: 24, name: fmt.Sprintf("claim without capabilities behind %d that require one", restricted), workers: agents,
		size: int64(restricted), unit: "claims/s", primary: "claim",
		iter: func(ctx context.Context, w int, rec *recorder) error {
			t := time.Now()
			c, err := svc.Claim(ctx, fleet, lease.ClaimRequest{Worker: fmt.Sprintf("w24-cpu-%d", w), TTL: time.Minute})
			if errors.Is(err, lease.ErrNothingReady) {
				return errEmpty
			}
			if err != nil {
				return err
			}
			if len(c.Item.Requires) != 0 {
				return fmt.Errorf("a claim without capabilities got item %s requiring %v", c.Item.ID, c.Item.Requires)
			}
			rec.observe("claim", t)
			rec.done()
			_, err = svc.Release(ctx, fleet, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "bench")
			return err
		},
	}, {
		workload: 24, name: fmt.Sprintf("claim with another capability behind %d that require one", restricted), workers: agents,
		size: int64(restricted), unit: "claims/s", primary: "claim",
		iter: func(ctx context.Context, w int, rec *recorder) error {
			t := time.Now()
			c, err := svc.Claim(ctx, fleet, lease.ClaimRequest{Worker: fmt.Sprintf("w24-tpu-%d", w), TTL: time.Minute,
				Capabilities: []string{otherCapability}})
			if errors.Is(err, lease.ErrNothingReady) {
				return errEmpty
			}
			if err != nil {
				return err
			}
			if slices.Contains(c.Item.Requires, restrictedCapability) {
				return fmt.Errorf("a claim offering %s got item %s requiring %v", otherCapability, c.Item.ID, c.Item.Requires)
			}
			rec.observe("claim", t)
			rec.done()
			_, err = svc.Release(ctx, fleet, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "bench")
			return err
		},
	}}
	for _, r := range e.interleave(ctx, vs) {
		e.add(r)
	}
	return nil
}
