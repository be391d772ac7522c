package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// Workload 21: the long poll. -longpoll-agents (256) agents wait in
// ClaimWait on the lease service, spread over one or two notifiers (two
// stand for two server replicas that each LISTEN), while a producer makes
// -longpoll-rate (100) items ready per second, one per transaction; an
// agent that is granted an item completes it and waits again. Measured:
// claim transactions per granted item (the notifiers' WaitStats), with
// wake-ups to one waiting claim per item (now) and to every waiting claim
// of the project (BroadcastWakeups: the behaviour before), in the same
// run. "wake claims" leave out the first claim of each wait, which any
// long poll makes.

func init() {
	register(workload{id: 21, name: "long poll: claim transactions per grant", run: runW21})
}

func runW21(ctx context.Context, e *env) error {
	agents, rate := e.cfg.LongPollAgents, e.cfg.LongPollRate
	if e.cfg.Smoke {
		agents = min(agents, 16)
	}
	for _, replicas := range []int{1, 2} {
		for _, broadcast := range []bool{true, false} {
			r, err := longPoll(ctx, e, agents, replicas, rate, broadcast)
			if err != nil {
				return err
			}
			e.logf("  W21 %-32s agents=%d %.1f grants/s  %.2f claims/grant (%.2f wake claims/grant)",
				r.Name, agents, r.Rate, r.Extra["claims_per_grant"], r.Extra["wake_claims_per_grant"])
			e.add(r)
		}
	}
	return nil
}

func longPoll(ctx context.Context, e *env, agents, replicas, rate int, broadcast bool) (Result, error) {
	project, err := createProject(ctx, e.pool, e.newProjectName("w21"))
	if err != nil {
		return Result{}, err
	}
	svc := lease.NewService(e.pool, nil, lease.Config{})
	g := graph.NewService(e.pool, nil)
	ns := make([]*lease.Notifier, replicas)
	for i := range ns {
		ns[i] = lease.NewNotifier(e.pool, nil)
		ns[i].BroadcastWakeups = broadcast
		ns[i].Start(ctx)
		defer ns[i].Stop()
		<-ns[i].Listening()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
				if _, err := g.CreateItem(ctx, project, graph.NewItem{Title: "w21 " + uuid.NewString()[:8], CreatedBy: benchPrincipal}); err != nil {
					return err
				}
			}
		}
	}
	stats := func() (s lease.WaitStats) {
		for _, nt := range ns {
			x := nt.Stats()
			s.Waits += x.Waits
			s.Attempts += x.Attempts
			s.Grants += x.Grants
		}
		return s
	}
	if err := produce(e.warmup()); err != nil {
		return Result{}, err
	}
	s0 := stats()
	if err := produce(e.duration()); err != nil {
		return Result{}, err
	}
	s1 := stats()
	cancel()
	wg.Wait()
	if failed != nil {
		return Result{}, failed
	}
	mode := "one waiter per item"
	if broadcast {
		mode = "every waiter (before)"
	}
	grants := s1.Grants - s0.Grants
	r := Result{
		Workload: 21, Name: fmt.Sprintf("%s, %d replica(s)", mode, replicas), Agents: agents, Size: int64(rate),
		Seconds: e.duration().Seconds(), Ops: grants, Unit: "grants/s",
		Extra: map[string]float64{"replicas": float64(replicas), "items_per_s": float64(rate)},
	}
	r.Rate = round(float64(grants)/r.Seconds, 1)
	if grants > 0 {
		r.Extra["claims_per_grant"] = round(float64(s1.Attempts-s0.Attempts)/float64(grants), 2)
		r.Extra["wake_claims_per_grant"] = round(float64((s1.Attempts-s0.Attempts)-(s1.Waits-s0.Waits))/float64(grants), 2)
	}
	return r, nil
}
