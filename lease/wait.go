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
	if wait <= 0 {
		return s.Claim(ctx, project, req)
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
		c, err := s.Claim(ctx, project, req)
		if !errors.Is(err, ErrNothingReady) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return Claim{}, db.Translate(ctx.Err())
		case <-deadline.C:
			return Claim{}, ErrNothingReady
		case <-ready:
		case <-recheck.C:
		}
	}
}
