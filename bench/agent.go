package main

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// heldLease is what an agent needs to act on a lease it holds.
type heldLease struct {
	id    uuid.UUID
	item  uuid.UUID
	epoch int64
	// row is the item's row id on the minimal pair's table.
	row int64
}

// agent is one simulated worker, over some path to the database: the
// minimal pair, the server's own SQL, or the REST API.
type agent interface {
	// claim returns errEmpty when nothing is ready.
	claim(ctx context.Context) (heldLease, error)
	heartbeat(ctx context.Context, l heldLease) error
	complete(ctx context.Context, l heldLease) error
	release(ctx context.Context, l heldLease) error
}

// lifecycle is one iteration: claim, optionally heartbeat, complete. It
// records the latency of each step and of the whole cycle, and counts one
// item.
func lifecycle(agents []agent, heartbeat bool, b *backlog) func(ctx context.Context, w int, rec *recorder) error {
	return func(ctx context.Context, w int, rec *recorder) error {
		a := agents[w]
		t0 := time.Now()
		l, err := a.claim(ctx)
		if err != nil {
			return err
		}
		rec.observe("claim", t0)
		if b != nil {
			b.claimed.Add(1)
		}
		if heartbeat {
			t := time.Now()
			if err := a.heartbeat(ctx, l); err != nil {
				return err
			}
			rec.observe("heartbeat", t)
		}
		t := time.Now()
		if err := a.complete(ctx, l); err != nil {
			return err
		}
		rec.observe("complete", t)
		rec.observe("cycle", t0)
		rec.done()
		return nil
	}
}

// claimRelease is one iteration of claim then release: the ready set stays
// the same size, so claim latency can be compared across project sizes.
func claimRelease(agents []agent) func(ctx context.Context, w int, rec *recorder) error {
	return func(ctx context.Context, w int, rec *recorder) error {
		a := agents[w]
		t0 := time.Now()
		l, err := a.claim(ctx)
		if err != nil {
			return err
		}
		rec.observe("claim", t0)
		t := time.Now()
		if err := a.release(ctx, l); err != nil {
			return err
		}
		rec.observe("release", t)
		rec.done()
		return nil
	}
}
