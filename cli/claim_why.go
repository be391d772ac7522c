package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// whyLimit is how many ready items a claim that found nothing reads to say
// why: the first page by priority, enough to explain the usual case.
const whyLimit = 100

// nothingReady is the error of a claim that found nothing: the usual hint,
// and, when the project has ready items this claim could not take, why.
// The reasons are read after the claim (one list call), so they describe
// the moment after it; a failed read leaves the plain hint.
func nothingReady(ctx context.Context, s *session, worker string, labels, caps []string) error {
	msg := fmt.Sprintf("project %q: %s", s.cfg.Project, hintNothing)
	page, err := s.api.ListItems(ctx, s.cfg.Project, client.ListItemsOptions{State: client.StateReady, Sort: "-priority", Limit: whyLimit})
	if err != nil {
		return &exitError{code: ExitNothing, err: errors.New(msg)}
	}
	why := whyNotClaimed(page.Items, worker, labels, caps, time.Now())
	if len(why) == 0 {
		return &exitError{code: ExitNothing, err: errors.New(msg)}
	}
	msg = fmt.Sprintf("project %q: nothing is ready for this claim; try again later, or wait for work with --wait 30s", s.cfg.Project)
	for _, line := range why {
		msg += "\n  why: " + line
	}
	return &exitError{code: ExitNothing, err: errors.New(msg)}
}

// whyNotClaimed sorts ready items a claim by worker with labels and caps
// did not get into the reasons it could not, one line per reason with a
// count and an example.
func whyNotClaimed(items []client.Item, worker string, labels, caps []string, now time.Time) []string {
	var reserved, backoff, scopes, unlabelled, unable []client.Item
	missing := map[string]bool{}
	for _, it := range items {
		b := it.BlockedBy
		switch {
		case b.ReservedFor != nil && *b.ReservedFor != worker && (b.ReservedUntil == nil || b.ReservedUntil.After(now)):
			reserved = append(reserved, it)
		case b.RetryAfter != nil && b.RetryAfter.After(now):
			backoff = append(backoff, it)
		case len(b.Scopes) > 0:
			scopes = append(scopes, it)
		case !hasAll(it.Labels, labels):
			unlabelled = append(unlabelled, it)
		case !hasAll(caps, it.Requires):
			unable = append(unable, it)
			for _, r := range it.Requires {
				if !slices.Contains(caps, r) {
					missing[r] = true
				}
			}
		}
	}
	var out []string
	if n := len(reserved); n > 0 {
		b := reserved[0].BlockedBy
		until := ""
		if b.ReservedUntil != nil {
			until = " until " + fmtTime(*b.ReservedUntil)
		}
		out = append(out, fmt.Sprintf("%s kept for the worker that asked a person about %s (%s%s: worker %q%s); other workers get %s after that",
			count(n, "ready item is", "ready items are"), pick(n, "it", "them"), eg(n), itemLabel(reserved[0].ID, reserved[0].Title), *b.ReservedFor, until, pick(n, "it", "them")))
	}
	if n := len(backoff); n > 0 {
		out = append(out, fmt.Sprintf("%s out a retry backoff after a failure (%s%s, until %s)",
			count(n, "ready item waits", "ready items wait"), eg(n), itemLabel(backoff[0].ID, backoff[0].Title), fmtTime(*backoff[0].BlockedBy.RetryAfter)))
	}
	if n := len(scopes); n > 0 {
		h := scopes[0].BlockedBy.Scopes[0]
		out = append(out, fmt.Sprintf("%s write scopes a live lease holds (%s%s: %s, held by worker %q)",
			count(n, "ready item touches", "ready items touch"), eg(n), itemLabel(scopes[0].ID, scopes[0].Title), strings.Join(h.Scopes, ", "), h.Worker))
	}
	if n := len(unlabelled); n > 0 {
		out = append(out, fmt.Sprintf("%s not carry every label asked for (--labels %s)",
			count(n, "ready item does", "ready items do"), strings.Join(labels, ",")))
	}
	if n := len(unable); n > 0 {
		names := make([]string, 0, len(missing))
		for r := range missing {
			names = append(names, r)
		}
		slices.Sort(names)
		out = append(out, fmt.Sprintf("%s capabilities this claim did not offer: %s (--capabilities)",
			count(n, "ready item requires", "ready items require"), strings.Join(names, ", ")))
	}
	return out
}

// hasAll reports whether have holds every one of want.
func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// eg introduces the example of several items.
func eg(n int) string { return pick(n, "", "e.g. ") }
