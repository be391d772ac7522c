package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// serviceAgent calls the lease service directly over the pool: the same
// transactions and statements the server runs for a request, without HTTP.
type serviceAgent struct {
	svc     *lease.Service
	project uuid.UUID
	worker  string
}

func newLeaseService(e *env) *lease.Service {
	return lease.NewService(e.pool, nil, lease.Config{})
}

func serviceAgents(e *env, project uuid.UUID, n int) []agent {
	svc := newLeaseService(e)
	agents := make([]agent, n)
	for i := range agents {
		agents[i] = &serviceAgent{svc: svc, project: project, worker: fmt.Sprintf("bench-%d", i)}
	}
	return agents
}

func (a *serviceAgent) claim(ctx context.Context) (heldLease, error) {
	c, err := a.svc.Claim(ctx, a.project, lease.ClaimRequest{Worker: a.worker, TTL: leaseSeconds * time.Second})
	if errors.Is(err, lease.ErrNothingReady) {
		return heldLease{}, errEmpty
	}
	if err != nil {
		return heldLease{}, err
	}
	return heldLease{id: c.Lease.ID, item: c.Lease.ItemID, epoch: c.Lease.Epoch}, nil
}

func fence(l heldLease) lease.Fence { return lease.Fence{LeaseID: l.id, Epoch: l.epoch} }

func (a *serviceAgent) heartbeat(ctx context.Context, l heldLease) error {
	_, err := a.svc.Heartbeat(ctx, a.project, fence(l), lease.Heartbeat{})
	return err
}

func (a *serviceAgent) complete(ctx context.Context, l heldLease) error {
	_, err := a.svc.Complete(ctx, a.project, fence(l), json.RawMessage(`{"ok":true}`), nil)
	return err
}

func (a *serviceAgent) release(ctx context.Context, l heldLease) error {
	_, err := a.svc.Release(ctx, a.project, fence(l), "bench")
	return err
}
