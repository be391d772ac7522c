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
		return explain(client.ErrNothingReady, s.cfg)
	}
	msg := fmt.Sprintf("project %q: nothing is ready for this claim; %s", s.cfg.Project, hintWait)
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
