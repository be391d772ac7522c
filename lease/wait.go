package lease

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// passOnItems bounds how many free items of one label set a woken claim
// that got nothing reads to hand its wake-up on.
const passOnItems = 16

// ClaimWait is Claim as a long poll: when nothing is ready it waits, in
// the project's queue of waiting claims on n, for a wake-up: the
// notifier hands each item that becomes ready to the claim that has waited
// longest (see Notifier). A woken claim that gets nothing reads which
// items are still free and hands the wake-up to a waiting claim that can
// take one (its labels, or a continuity reservation, kept it from the
// item). Every Config.WaitRecheck one claim per project and notifier
// tries anyway (the time gates open without a write) and passes on what
// it finds the same way. It waits until wait has passed; then
// ErrNothingReady. A nil n only rechecks. wait <= 0 is a plain Claim.
//
// Errors: those of Claim; unavailable when ctx ends first.
func (s *Service) ClaimWait(ctx context.Context, project uuid.UUID, req ClaimRequest, wait time.Duration, n *Notifier) (Claim, error) {
	if wait <= 0 {
		return s.Claim(ctx, project, req)
	}
	req, _, err := s.cleanClaim(req)
	if err != nil {
		return Claim{}, err
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := time.NewTicker(s.cfg.WaitRecheck)
	defer recheck.Stop()
	if n == nil {
		return s.claimRechecking(ctx, project, req, deadline.C, recheck.C)
	}
	w := n.waitJoin(project, newWaitFilter(req.Labels, req.Worker, req.TokenID))
	defer n.waitLeave(w)
	n.waits.Add(1)
	for {
		tickets := n.waitBegin(w)
		n.attempts.Add(1)
		c, err := s.Claim(ctx, project, req)
		if err == nil {
			n.waitGranted(w, tickets)
			return c, nil
		}
		if !errors.Is(err, ErrNothingReady) {
			return Claim{}, err
		}
		var free []claimable
		backlog := 0
		if tickets > 0 && !n.BroadcastWakeups {
			sets, most, b := n.waitLooking(w)
			if free, err = s.claimable(ctx, project, sets, most); err != nil {
				return Claim{}, err
			}
			backlog = b
		}
		n.waitFailed(w, tickets, backlog, free)
		n.waitIdle(w)
		if err := waitTurn(ctx, n, w, deadline.C, recheck.C); err != nil {
			return Claim{}, err
		}
	}
}

// waitTurn blocks until the waiter holds a ticket or runs the project's
// recheck; ErrNothingReady when the deadline passes first.
func waitTurn(ctx context.Context, n *Notifier, w *waiter, deadline, recheck <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return db.Translate(ctx.Err())
		case <-deadline:
			return ErrNothingReady
		case <-w.ch:
			return nil
		case <-recheck:
			if n.waitRecheck(w) {
				return nil
			}
		}
	}
}

// claimRechecking is ClaimWait without a notifier: it tries every recheck.
func (s *Service) claimRechecking(ctx context.Context, project uuid.UUID, req ClaimRequest, deadline, recheck <-chan time.Time) (Claim, error) {
	for {
		c, err := s.Claim(ctx, project, req)
		if !errors.Is(err, ErrNothingReady) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return Claim{}, db.Translate(ctx.Err())
		case <-deadline:
			return Claim{}, ErrNothingReady
		case <-recheck:
		}
	}
}

// claimable reads up to perSet items a claim could take now for each label
// set (see ClaimableItems).
func (s *Service) claimable(ctx context.Context, project uuid.UUID, sets []string, perSet int) ([]claimable, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	rows, err := dbq.New().ClaimableItems(ctx, s.exec, dbq.ClaimableItemsParams{
		Now: s.clock.Now(), ProjectID: project, LabelSets: sets, PerSet: int32(min(perSet, passOnItems)),
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	// An item of several sets is one item: one wake-up.
	seen := make(map[uuid.UUID]bool, len(rows))
	out := make([]claimable, 0, len(rows))
	for _, r := range rows {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		out = append(out, claimable{labels: r.Labels, reserved: r.Reserved, worker: r.PreferredWorker, token: r.PreferredToken})
	}
	return out, nil
}
