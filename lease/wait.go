package lease

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// ClaimWait is Claim as a long poll. It claims once; when nothing is ready
// it waits in the project's queue on n for a turn to claim again, until
// wait has passed (then ErrNothingReady). The notifier gives each item that
// becomes ready to one waiting claim whose labels and worker can take it,
// a claim that was given an item and got another (or none, or left) hands
// it on, and every Config.WaitRecheck one waiting claim per label set
// tries anyway, for the time gates that open without a write (see wake.go
// for the rules and why no wake-up is lost). A nil n only rechecks, every
// waiter on its own. wait <= 0 is a plain Claim.
//
// Errors: those of Claim; unavailable when ctx ends first.
func (s *Service) ClaimWait(ctx context.Context, project uuid.UUID, req ClaimRequest, wait time.Duration, n *Notifier) (Claim, error) {
	if wait <= 0 || n == nil {
		c, err := s.claimRechecking(ctx, project, req, wait)
		if err == nil && n != nil {
			n.found(project, c.Item.ID)
		}
		return c, err
	}
	req, _, err := s.cleanClaim(req)
	if err != nil {
		return Claim{}, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// Subscribe, then claim: an item that becomes ready during the first
	// claim is an event this waiter can be given.
	w, claim := n.join(project, newWaitFilter(req), s.cfg.WaitRecheck)
	failed := false
	defer func() { n.leave(w, failed) }()
	for {
		if !claim {
			// A claim with this filter found nothing in this recheck
			// round, and nothing since is unknown to the notifier.
			if err := waitTurn(ctx, w, deadline.C); err != nil {
				return Claim{}, err
			}
			n.begin(w)
		}
		claim = false
		c, err := s.Claim(ctx, project, req)
		switch {
		case err == nil:
			n.granted(w, c.Item.ID)
			return c, nil
		case !errors.Is(err, ErrNothingReady):
			failed = mayHaveLocked(err)
			return Claim{}, err
		}
		n.nothing(w)
	}
}

// waitTurn blocks until w has a turn (an event, a pass-on, a broadcast or
// its label set's recheck); ErrNothingReady when the deadline passes first.
func waitTurn(ctx context.Context, w *waiter, deadline <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return db.Translate(ctx.Err())
	case <-deadline:
		return ErrNothingReady
	case <-w.turn:
		return nil
	}
}

// mayHaveLocked reports whether a claim that failed with err may have held
// an item's row before it rolled back: anything but the refusals Claim
// makes before it looks for an item.
func mayHaveLocked(err error) bool {
	var we *wgerr.Error
	if errors.As(err, &we) {
		return we.Code != wgerr.CodeInvalid && we.Code != wgerr.CodeRateLimited
	}
	return true
}

// claimRechecking is ClaimWait without a notifier: it tries again every
// recheck until wait has passed.
func (s *Service) claimRechecking(ctx context.Context, project uuid.UUID, req ClaimRequest, wait time.Duration) (Claim, error) {
	if wait <= 0 {
		return s.Claim(ctx, project, req)
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
		case <-recheck.C:
		}
	}
}
