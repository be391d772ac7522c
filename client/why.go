package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// whyLimit is how many items of each state NotClaimedReasons reads: the
// first page by priority, enough to explain the usual case.
const whyLimit = 100

// NotClaimedReasons says why a claim like req found nothing although the
// project has items it might have taken: it reads the project's ready and
// blocked items (two calls) and answers WhyNotClaimed's lines. when
// formats the instants named (nil: RFC 3339). The lines describe the
// moment of this read, after the claim; none means nothing stood in req's
// way but the lack of work.
func (c *Client) NotClaimedReasons(ctx context.Context, project string, req ClaimRequest, when func(time.Time) string) ([]string, error) {
	var items []Item
	for _, state := range []string{StateReady, StateBlocked} {
		page, err := c.ListItems(ctx, project, ListItemsOptions{State: state, Sort: "-priority", Limit: whyLimit})
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
	}
	return WhyNotClaimed(items, req, time.Now(), when), nil
}

// WhyNotClaimed sorts the items that a claim like req did not get into
// the reasons it could not take them, one line per reason with a count and
// an example. A ready item: a label the claim asked for, a capability it
// did not offer; and for an item it could take otherwise, kept for
// another worker after a person answered its question, under a spent
// budget, write scopes a live lease holds. A blocked item only
// when a retry backoff after a failure is all that holds back an item the
// claim could take (items waiting for their dependencies, children or a
// person are not this claim's business). An item none of these explains
// (the claim lost it in a race) gives no line. when formats the instants
// named (nil: RFC 3339).
func WhyNotClaimed(items []Item, req ClaimRequest, now time.Time, when func(time.Time) string) []string {
	if when == nil {
		when = func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	}
	var reserved, backoff, budgets, scopes, unlabelled, unable []Item
	missing := map[string]bool{}
	for _, it := range items {
		b := it.BlockedBy
		if it.State == StateBlocked {
			if b.RetryAfter != nil && b.RetryAfter.After(now) && len(b.Dependencies)+len(b.Children)+len(b.Attention) == 0 &&
				hasAll(it.Labels, req.Labels) && hasAll(req.Capabilities, it.Requires) {
				backoff = append(backoff, it)
			}
			continue
		}
		if it.State != StateReady {
			continue
		}
		// A reservation, a budget or a held scope is the reason only for
		// an item this claim could take otherwise: the others are told by
		// their labels or capabilities.
		takeable := hasAll(it.Labels, req.Labels) && hasAll(req.Capabilities, it.Requires)
		switch {
		case takeable && b.ReservedFor != nil && *b.ReservedFor != req.Worker && (b.ReservedUntil == nil || b.ReservedUntil.After(now)):
			reserved = append(reserved, it)
		case takeable && len(b.Budgets) > 0:
			budgets = append(budgets, it)
		case takeable && len(b.Scopes) > 0:
			scopes = append(scopes, it)
		case !hasAll(it.Labels, req.Labels):
			unlabelled = append(unlabelled, it)
		case !hasAll(req.Capabilities, it.Requires):
			unable = append(unable, it)
			for _, r := range it.Requires {
				if !slices.Contains(req.Capabilities, r) {
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
			until = " until " + when(*b.ReservedUntil)
		}
		out = append(out, fmt.Sprintf("%s kept for the worker that asked a person about %s (%s%s: worker %q%s); other workers get %s after that",
			plural(n, "ready item is", "ready items are"), pick(n, "it", "them"), eg(n), label(reserved[0]), *b.ReservedFor, until, pick(n, "it", "them")))
	}
	if n := len(backoff); n > 0 {
		out = append(out, fmt.Sprintf("%s out a retry backoff after a failure (%s%s, until %s)",
			plural(n, "item this claim could take waits", "items this claim could take wait"), eg(n), label(backoff[0]),
			when(*backoff[0].BlockedBy.RetryAfter)))
	}
	if n := len(budgets); n > 0 {
		r := budgets[0].BlockedBy.Budgets[0]
		out = append(out, fmt.Sprintf("%s under a spent budget (%s%s: the budget of %s); nothing under it is handed out until a person raises it",
			plural(n, "ready item is", "ready items are"), eg(n), label(budgets[0]), label(Item{ID: r.ID, Title: r.Title})))
	}
	if n := len(scopes); n > 0 {
		h := scopes[0].BlockedBy.Scopes[0]
		out = append(out, fmt.Sprintf("%s write scopes a live lease holds (%s%s: %s, held by worker %q)",
			plural(n, "ready item touches", "ready items touch"), eg(n), label(scopes[0]), strings.Join(h.Scopes, ", "), h.Worker))
	}
	if n := len(unlabelled); n > 0 {
		out = append(out, fmt.Sprintf("%s not carry every label asked for (%s)",
			plural(n, "ready item does", "ready items do"), strings.Join(req.Labels, ", ")))
	}
	if n := len(unable); n > 0 {
		names := make([]string, 0, len(missing))
		for r := range missing {
			names = append(names, r)
		}
		slices.Sort(names)
		out = append(out, fmt.Sprintf("%s capabilities this claim did not offer: %s",
			plural(n, "ready item requires", "ready items require"), strings.Join(names, ", ")))
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

// label names an item for a person: its title and the first 8 characters
// of its id.
func label(it Item) string {
	id := it.ID
	if len(id) > 8 {
		id = id[:8]
	}
	title := it.Title
	if r := []rune(title); len(r) > 40 {
		title = string(r[:39]) + "…"
	}
	return title + " (" + id + ")"
}

func plural(n int, one, many string) string {
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
