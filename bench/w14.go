package main

import (
	"context"
	"errors"
	"fmt"
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

// scopeItems gives the open unleased items of the project that touch
// nothing yet their scope and requirements; held marks the items about to
// be held (a path prefix no ready item's scope overlaps, and only "base"
// required).
func scopeItems(ctx context.Context, e *env, project uuid.UUID, held bool) error {
	prefix := "work"
	if held {
		prefix = "held"
	}
	_, err := e.pool.Exec(ctx, `
		UPDATE items SET touches = ARRAY['r' || (seq % 50) || ':' || $2 || seq || '/**'],
		                 requires = CASE WHEN seq % 2 = 0 AND NOT $3 THEN ARRAY['base', 'c' || (seq % 50)] ELSE ARRAY['base'] END
		WHERE project_id = $1 AND status = 'open' AND touches = '{}' AND active_lease_id IS NULL`, project, prefix, held)
	return err
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
		if err := loadReady(ctx, e.pool, project, held, 10); err != nil {
			return err
		}
		if scoped {
			if err := scopeItems(ctx, e, project, true); err != nil {
				return err
			}
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
			if err := loadReady(ctx, e.pool, project, k, 0); err != nil {
				return err
			}
			if scoped {
				return scopeItems(ctx, e, project, false)
			}
			return nil
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
