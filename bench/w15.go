package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// Workload 15: the long poll. 256 agents (16 with -smoke) wait for work
// in ClaimWait on the lease service, spread over one or two notifiers (two
// stand for two server replicas, each with its own LISTEN), while a
// producer makes 100 items ready per second (20 with -smoke), one per
// transaction; an agent that is granted an item completes it and waits
// again (its next wait begins with a claim, as every long poll does).
// Measured: claim attempts per granted item, counted from the statements
// the service sent, so the same workload measures any version of the
// notifier: each claim attempt begins with ClaimItemDirect (the one-
// statement claim; ClaimItem follows only when that one hands the claim
// to the transactional path) or, in versions without it, runs ClaimItem
// once.

func init() {
	register(workload{id: 15, name: "long poll: claim transactions per grant", run: runW15})
}

// claimCounter counts the claim statements sent on a pool.
type claimCounter struct{ direct, inTx atomic.Int64 }

func (c *claimCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	switch {
	case strings.HasPrefix(d.SQL, "-- name: ClaimItemDirect "):
		c.direct.Add(1)
	case strings.HasPrefix(d.SQL, "-- name: ClaimItem "):
		c.inTx.Add(1)
	}
	return ctx
}

// attempts is the number of claim attempts: the one-statement claims where
// the service sends them (a fallback to the transaction is part of the
// same attempt), else the transactional ones.
func (c *claimCounter) attempts() int64 {
	if n := c.direct.Load(); n > 0 {
		return n
	}
	return c.inTx.Load()
}

func (c *claimCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func runW15(ctx context.Context, e *env) error {
	agents, rate := 256, 100
	if e.cfg.Smoke {
		agents, rate = 16, 20
	}
	for _, replicas := range []int{1, 2} {
		r, err := longPoll(ctx, e, agents, replicas, rate)
		if err != nil {
			return err
		}
		e.logf("  W15 %-14s agents=%d %.1f grants/s  %.2f claims/grant",
			r.Name, agents, r.Rate, r.Extra["claims_per_grant"])
		e.add(r)
	}
	return nil
}

func longPoll(ctx context.Context, e *env, agents, replicas, rate int) (Result, error) {
	project, err := createProject(ctx, e.pool, e.newProjectName("w15"))
	if err != nil {
		return Result{}, err
	}
	var claims claimCounter
	pcfg, err := pgxpool.ParseConfig(e.url)
	if err != nil {
		return Result{}, err
	}
	pcfg.MaxConns = int32(e.cfg.Pool)
	pcfg.ConnConfig.Tracer = &claims
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()
	svc := lease.NewService(pool, nil, lease.Config{})
	g := graph.NewService(e.pool, nil)
	ns := make([]*lease.Notifier, replicas)
	for i := range ns {
		ns[i] = lease.NewNotifier(e.pool, nil)
		ns[i].Start(ctx)
		defer ns[i].Stop()
		<-ns[i].Listening()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var grants atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nt := ns[a%replicas]
			req := lease.ClaimRequest{Worker: fmt.Sprintf("lp-%d", a), TTL: leaseSeconds * time.Second}
			for ctx.Err() == nil {
				c, err := svc.ClaimWait(ctx, project, req, 30*time.Second, nt)
				if errors.Is(err, lease.ErrNothingReady) || ctx.Err() != nil {
					continue
				}
				if err == nil {
					grants.Add(1)
					_, err = svc.Complete(ctx, project, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, nil, nil)
				}
				if err != nil && ctx.Err() == nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	produce := func(d time.Duration) error {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		end := time.After(d)
		for {
			select {
			case <-end:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				if _, err := g.CreateItem(ctx, project, graph.NewItem{Title: "w15 " + uuid.NewString()[:8], CreatedBy: benchPrincipal}); err != nil {
					return err
				}
			}
		}
	}
	if err := produce(e.warmup()); err != nil {
		return Result{}, err
	}
	c0, g0 := claims.attempts(), grants.Load()
	start := time.Now()
	if err := produce(e.duration()); err != nil {
		return Result{}, err
	}
	// A smoke run checks that the workload works, not how fast
	// (e.minOps): its window stays open, items still coming at the rate,
	// until a grant was counted in it, for at most 30 s more; on a loaded
	// machine none may have landed in its 0.2 s.
	for deadline := time.Now().Add(30 * time.Second); grants.Load()-g0 < e.minOps() && time.Now().Before(deadline); {
		if err := produce(100 * time.Millisecond); err != nil {
			return Result{}, err
		}
	}
	elapsed := time.Since(start)
	c1, g1 := claims.attempts(), grants.Load()
	cancel()
	wg.Wait()
	if failed != nil {
		return Result{}, failed
	}
	granted := g1 - g0
	r := Result{
		Workload: 15, Name: fmt.Sprintf("%d replica(s)", replicas), Agents: agents, Size: int64(rate),
		Seconds: max(e.duration(), elapsed).Seconds(), Ops: granted, Unit: "grants/s",
		Extra: map[string]float64{"replicas": float64(replicas), "items_per_s": float64(rate)},
	}
	r.Rate = round(float64(granted)/r.Seconds, 1)
	if granted > 0 {
		r.Extra["claims_per_grant"] = round(float64(c1-c0)/float64(granted), 2)
	}
	return r, nil
}
