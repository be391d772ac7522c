package lease

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// ClaimWait is Claim as a long poll. It claims once; when nothing is ready
// it waits in the project's queue on n for a turn to claim again, until
// wait has passed (then ErrNothingReady). The notifier gives each item that
// becomes ready to one waiting claim whose labels and worker can take it,
// a claim that was given an item and got another (or none, or left) hands
// it on, the end of a retry backoff or of a continuity reservation is an
// event at its instant (due.go), and every Config.WaitRecheck one waiting
// claim per label set tries anyway, the safety net (see wake.go for the
// rules and why no wake-up is lost). A nil n only rechecks, every
// waiter on its own. wait <= 0 is a plain Claim.
//
// Errors: those of Claim; unavailable when ctx ends first.
func (s *Service) ClaimWait(ctx context.Context, project uuid.UUID, req ClaimRequest, wait time.Duration, n *Notifier) (Claim, error) {
	return claimWaiting(ctx, s, project, req, wait, n,
		func(ctx context.Context) (Claim, error) { return s.Claim(ctx, project, req) },
		func(c Claim) []uuid.UUID { return []uuid.UUID{c.Item.ID} })
}

// claimWaiting is ClaimWait for any claim (one item or a batch): claim
// answers what it granted, items names the items it took. Each attempt
// after the first runs on db.Rearm(ctx): the checks the request carries
// for later attempts (a token's, auth.Service.Rechecking) ride with that
// attempt's statement, so a token revoked while the claim waited is
// refused instead of granted.
func claimWaiting[T any](ctx context.Context, s *Service, project uuid.UUID, req ClaimRequest, wait time.Duration, n *Notifier,
	claim func(context.Context) (T, error), items func(T) []uuid.UUID) (T, error) {
	var zero T
	if wait <= 0 || n == nil {
		c, err := claimRechecking(ctx, s, wait, claim)
		if err == nil && n != nil {
			for _, id := range items(c) {
				n.found(project, id)
			}
		}
		return c, err
	}
	req, _, err := s.cleanClaim(req)
	if err != nil {
		return zero, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// Subscribe, then claim: an item that becomes ready during the first
	// claim is an event this waiter can be given.
	w, first := n.join(project, newWaitFilter(req), s.cfg.WaitRecheck)
	failed := false
	defer func() { n.leave(w, failed) }()
	if !first {
		// A waiter that joins without claiming settles what its request
		// carries first (db.Precheck: the token's check, an
		// Idempotency-Key's record), which its first claim would have:
		// a revoked token or a retry of a request still in progress is
		// refused now, not a recheck later.
		if err := db.SettlePrechecks(ctx, s.exec); err != nil {
			return zero, err
		}
	}
	attempt := ctx
	for {
		if !first {
			// A claim with this filter found nothing in this recheck
			// round, and nothing since is unknown to the notifier.
			if err := waitTurn(ctx, w, deadline.C, n.draining); err != nil {
				return zero, err
			}
			n.begin(w)
			attempt = db.Rearm(ctx)
		}
		first = false
		began := clock.Local(nil).Read()
		c, err := claim(attempt)
		switch {
		case err == nil:
			// The waiter's own grant resolves its turn; the other items
			// of a batch resolve their events as grants outside a wait.
			ids := items(c)
			n.granted(w, ids[0])
			for _, id := range ids[1:] {
				n.found(project, id)
			}
			return c, nil
		case !errors.Is(err, ErrNothingReady):
			failed = mayHaveLocked(err)
			return zero, err
		}
		n.nothing(w)
		// It goes to sleep: the project's next time gate sets when one
		// waiter is woken without a notification (due.go).
		n.probeDue(ctx, project, clock.Local(nil).Read().Sub(began))
	}
}

// waitTurn blocks until w has a turn (an event, a pass-on, a broadcast or
// its label set's recheck); ErrNothingReady when the deadline passes or
// draining closes (Notifier.Drain) first.
func waitTurn(ctx context.Context, w *waiter, deadline <-chan time.Time, draining <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return db.Translate(ctx.Err())
	case <-deadline:
		return ErrNothingReady
	case <-draining:
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

// claimRechecking is ClaimWait without a notifier: it tries claim again
// every recheck until wait has passed.
func claimRechecking[T any](ctx context.Context, s *Service, wait time.Duration, claim func(context.Context) (T, error)) (T, error) {
	var zero T
	if wait <= 0 {
		return claim(ctx)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := time.NewTicker(s.cfg.WaitRecheck)
	defer recheck.Stop()
	attempt := ctx
	for {
		c, err := claim(attempt)
		if !errors.Is(err, ErrNothingReady) {
			return c, err
		}
		attempt = db.Rearm(ctx)
		select {
		case <-ctx.Done():
			return zero, db.Translate(ctx.Err())
		case <-deadline.C:
			return zero, ErrNothingReady
		case <-recheck.C:
		}
	}
}
