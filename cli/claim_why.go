package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/workgraph-dev/workgraph/client"
)

// nothingReady is the error of a claim that found nothing: the usual hint,
// and, when the project has ready items this claim could not take, why
// (client.NotClaimedReasons). A failed read leaves the plain hint.
func nothingReady(ctx context.Context, s *session, req client.ClaimRequest) error {
	why, err := s.api.NotClaimedReasons(ctx, s.cfg.Project, req, fmtTime)
	if err != nil || len(why) == 0 {
		return &exitError{code: ExitNothing, err: fmt.Errorf("project %q: %s", s.cfg.Project, hintNothing)}
	}
	msg := fmt.Sprintf("project %q: nothing is ready for this claim; try again later, or wait for work with --wait 30s", s.cfg.Project)
	for _, line := range why {
		msg += "\n  why: " + line
	}
	return &exitError{code: ExitNothing, err: errors.New(msg)}
}

// count says n things, in the singular or the plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
