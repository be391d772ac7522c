package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// Workload 14: the claim's cost with capabilities and write scopes. Two
// projects, measured interleaved in one run, each with -leases (1,000)
// live leases and a ready backlog its agents (64) claim and complete:
//   - "plain": no item requires or touches anything, claims offer nothing;
//   - "scopes": every held lease holds a scope (resource r0..r49, a path
//     of its own), every ready item touches a path of one of those 50
//     resources that no held scope overlaps, and requires "base" and, one
//     item in two, one of 50 capabilities; agent w offers "base" and
//     capabilities w%50 and (w+1)%50 (50 capability sets).
// The figure is claim p50 of "scopes" over that of "plain" (target: within
// 1.5x), both on the lease service directly.

func init() {
	register(workload{id: 14, name: "claim with capabilities and write scopes (1,000 scoped leases, 50 capability sets)", run: runW14})
}

// capabilityAgent is a serviceAgent whose claims offer capabilities.
type capabilityAgent struct {
	serviceAgent
	caps []string
}

func (a *capabilityAgent) claim(ctx context.Context) (heldLease, error) {
	c, err := a.svc.Claim(ctx, a.project, lease.ClaimRequest{Worker: a.worker, TTL: leaseSeconds * time.Second, Capabilities: a.caps})
	if errors.Is(err, lease.ErrNothingReady) {
		return heldLease{}, errEmpty
	}
	if err != nil {
		return heldLease{}, err
	}
	return heldLease{id: c.Lease.ID, item: c.Lease.ItemID, epoch: c.Lease.Epoch}, nil
}

// loadScoped loads n ready items that touch and require what a scoped
// item of this workload does: item k (counted by next across loads) touches
// a path of its own under resource r(k%50), the prefix "held" for the
// items about to be held (no ready item's scope overlaps them), "work"
// for the others; it requires "base" and, when k is even and the item is
// not to be held, capability c(k%50). The items are written with their
// scopes by COPY, like the plain variant's, so that refilling the backlog
// costs both variants the same while the claims are measured.
func loadScoped(ctx context.Context, e *env, project uuid.UUID, n int, held bool, next *atomic.Int64) error {
	prefix := "work"
	if held {
		prefix = "held"
	}
	return copyItems(ctx, e.pool, project, n, func(i int, r *itemRow) {
		k := next.Add(1)
		r.id = uuid.New()
		r.touches = []string{fmt.Sprintf("r%d:%s%d/**", k%50, prefix, k)}
		r.requires = []string{"base"}
		if held {
			r.priority = 10
		}
		if k%2 == 0 && !held {
			r.requires = append(r.requires, fmt.Sprintf("c%d", k%50))
		}
	})
}

func runW14(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	n, held := e.cfg.ContendedAgents, e.cfg.Leases
	size := min(e.cfg.Backlog, 20_000)
	svc := newLeaseService(e)
	var vs []variant
	for _, scoped := range []bool{false, true} {
		name := "plain"
		if scoped {
			name = "scopes"
		}
		project, err := s.restProject(ctx, e.newProjectName("w14"))
		if err != nil {
			return err
		}
		// The held leases: items claimed by a holder that never ends them.
		var seq atomic.Int64
		if scoped {
			err = loadScoped(ctx, e, project, held, true, &seq)
		} else {
			err = loadReady(ctx, e.pool, project, held, 10)
		}
		if err != nil {
			return err
		}
		// Statistics before the holder's claims: on a server without
		// autovacuum (CI's) the freshly loaded items would be planned as
		// an empty table, and a claim with scoped candidates would test
		// the overlap of every ready item before its LIMIT.
		if err := refreshStats(ctx, e.pool); err != nil {
			return err
		}
		holder := &capabilityAgent{serviceAgent{svc: svc, project: project, worker: "holder"}, []string{"base"}}
		for i := 0; i < held; i++ {
			if _, err := holder.claim(ctx); err != nil {
				return fmt.Errorf("held lease %d: %w", i, err)
			}
		}
		b, err := newBacklog(wctx, size, size*9/10, size/10, func(ctx context.Context, k int) error {
			if scoped {
				return loadScoped(ctx, e, project, k, false, &seq)
			}
			return loadReady(ctx, e.pool, project, k, 0)
		})
		if err != nil {
			return err
		}
		go b.watch(wctx)
		agents := make([]agent, n)
		for w := range agents {
			a := &capabilityAgent{serviceAgent: serviceAgent{svc: svc, project: project, worker: fmt.Sprintf("bench-%d", w)}}
			if scoped {
				a.caps = []string{"base", fmt.Sprintf("c%d", w%50), fmt.Sprintf("c%d", (w+1)%50)}
			}
			agents[w] = a
		}
		v := lifecycleVariant(14, name, agents, false, b)
		v.primary, v.size = "claim", int64(size)
		vs = append(vs, v)
	}
	if err := analyze(ctx, e.pool); err != nil {
		return err
	}
	for _, r := range e.interleave(ctx, vs) {
		e.add(r)
	}
	return nil
}
