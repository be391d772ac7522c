package lease

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
)

// ClaimWait is Claim as a long poll: when nothing is ready it waits for the
// notifier to signal that an item of the project became ready (and, every
// Config.WaitRecheck, tries anyway, for the time gates that open without a
// write), until wait has passed; then ErrNothingReady. A nil n only
// rechecks. wait <= 0 is a plain Claim.
//
// Errors: those of Claim; unavailable when ctx ends first.
func (s *Service) ClaimWait(ctx context.Context, project uuid.UUID, req ClaimRequest, wait time.Duration, n *Notifier) (Claim, error) {
	return waitFor(ctx, s, project, wait, n, func() (Claim, error) {
		return s.Claim(ctx, project, req)
	})
}

// waitFor runs claim until it answers anything but ErrNothingReady: again
// on each notification of the project's ready items and every
// Config.WaitRecheck, until wait has passed (then ErrNothingReady). wait <=
// 0 runs claim once.
func waitFor[T any](ctx context.Context, s *Service, project uuid.UUID, wait time.Duration, n *Notifier, claim func() (T, error)) (T, error) {
	var zero T
	if wait <= 0 {
		return claim()
	}
	var ready <-chan struct{}
	if n != nil {
		ch, unsubscribe := n.Subscribe(project)
		defer unsubscribe()
		ready = ch
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := time.NewTicker(s.cfg.WaitRecheck)
	defer recheck.Stop()
	for {
		c, err := claim()
		if !errors.Is(err, ErrNothingReady) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return zero, db.Translate(ctx.Err())
		case <-deadline.C:
			return zero, ErrNothingReady
		case <-ready:
		case <-recheck.C:
		}
	}
}
