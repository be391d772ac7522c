package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// nothingReady is the error of a claim that found nothing: the usual hint,
// and, when the project has ready items this claim could not take, why
// (client.NotClaimedReasons). A failed read leaves the plain hint.
func nothingReady(ctx context.Context, s *session, req client.ClaimRequest, waited time.Duration) error {
	why, err := s.api.NotClaimedReasons(ctx, s.cfg.Project, req, fmtTime)
	if err != nil || len(why) == 0 {
		if waited > 0 {
			return &exitError{code: ExitNothing, err: fmt.Errorf("project %q: nothing is ready to claim; %s", s.cfg.Project, waitHint(waited))}
		}
		return explain(client.ErrNothingReady, s.cfg)
	}
	msg := fmt.Sprintf("project %q: nothing is ready for this claim; %s", s.cfg.Project, waitHint(waited))
	for _, line := range why {
		msg += "\n  why: " + line
	}
	return &exitError{code: ExitNothing, err: errors.New(msg)}
}

// waitHint is what to do when nothing was ready: wait for work with --wait,
// or, for a claim that waited already (waited > 0), wait longer.
func waitHint(waited time.Duration) string {
	if waited <= 0 {
		return hintWait
	}
	return fmt.Sprintf("nothing became ready within --wait %s; try again later, or wait longer (workgraph work --loop --wait waits for work until interrupted)", waited)
}

// count says n things, in the singular or the plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
