package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWhyNotClaimed: each reason a ready item can be out of a claim's
// reach gets a line with the count and an example, and so does a retry
// backoff that alone holds back a blocked item the claim could take; an
// item the claim could have taken (it lost a race), an item reserved for
// this worker, a backoff of an item it could not take or that waits for
// more, and an item waiting for a person give none.
func TestWhyNotClaimed(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	later := now.Add(10 * time.Minute)
	earlier := now.Add(-time.Minute)
	str := func(s string) *string { return &s }
	item := func(id, title string, mod func(*client.Item)) client.Item {
		it := client.Item{ID: id + "-0000-0000-0000-000000000000", Title: title, State: client.StateReady}
		if mod != nil {
			mod(&it)
		}
		return it
	}
	items := []client.Item{
		item("aaaaaaaa", "kept for w2", func(it *client.Item) { it.BlockedBy.ReservedFor, it.BlockedBy.ReservedUntil = str("w2"), &later }),
		item("aaaaaaab", "kept for w2 too", func(it *client.Item) { it.BlockedBy.ReservedFor, it.BlockedBy.ReservedUntil = str("w2"), &later }),
		item("bbbbbbbb", "kept for me", func(it *client.Item) { it.BlockedBy.ReservedFor, it.BlockedBy.ReservedUntil = str("me"), &later }),
		item("cccccccc", "reservation over", func(it *client.Item) { it.BlockedBy.ReservedFor, it.BlockedBy.ReservedUntil = str("w2"), &earlier }),
		item("abababab", "under a spent budget", func(it *client.Item) {
			it.BlockedBy.Budgets = []client.ItemRef{{ID: "12345678-0000-0000-0000-000000000000", Title: "the root", State: client.StateBlocked}}
		}),
		item("eeeeeeee", "scope held", func(it *client.Item) {
			it.BlockedBy.Scopes = []client.ScopeHolder{{Worker: "w3", Scopes: []string{"repo:web"}}}
		}),
		item("ffffffff", "no label", nil),
		item("fffffff0", "no label, under a spent budget", func(it *client.Item) {
			it.BlockedBy.Budgets = []client.ItemRef{{ID: "12345678-0000-0000-0000-000000000000", Title: "the root", State: client.StateBlocked}}
		}),
		item("99999999", "needs a gpu", func(it *client.Item) { it.Labels, it.Requires = []string{"ml"}, []string{"gpu", "cuda"} }),
		item("88888888", "could have been mine", func(it *client.Item) { it.Labels, it.Requires = []string{"ml"}, []string{"cpu"} }),
		// Blocked: only a backoff of an item this claim could take is its
		// business.
		item("dddddddd", "backing off", func(it *client.Item) {
			it.State, it.Labels, it.BlockedBy.RetryAfter = client.StateBlocked, []string{"ml"}, &later
		}),
		item("dddddddf", "backing off, no label", func(it *client.Item) { it.State, it.BlockedBy.RetryAfter = client.StateBlocked, &later }),
		item("dddddde0", "backing off and waiting", func(it *client.Item) {
			it.State, it.Labels, it.BlockedBy.RetryAfter = client.StateBlocked, []string{"ml"}, &later
			it.BlockedBy.Dependencies = []client.ItemRef{{ID: "x", Title: "first", State: client.StateReady}}
		}),
		item("dddddde1", "backed off", func(it *client.Item) {
			it.State, it.Labels, it.BlockedBy.RetryAfter = client.StateBlocked, []string{"ml"}, &earlier
		}),
		item("dddddde2", "waiting for a person", func(it *client.Item) { it.State, it.Labels = client.StateAttention, []string{"ml"} }),
	}
	// The claim asked for label ml and offered cpu; items without ml are
	// out of reach for that alone.
	items[6].Labels = nil
	for i := range items[:6] {
		items[i].Labels = []string{"ml"}
	}
	got := client.WhyNotClaimed(items, client.ClaimRequest{Worker: "me", Labels: []string{"ml"}, Capabilities: []string{"cpu"}}, now, nil)
	want := []string{
		`2 ready items are kept for the worker that asked a person about them (e.g. kept for w2 (aaaaaaaa): worker "w2" until `,
		`1 item this claim could take waits out a retry backoff after a failure (backing off (dddddddd), until `,
		`1 ready item is under a spent budget (under a spent budget (abababab): the budget of the root (12345678)); nothing under it is handed out until a person raises it`,
		`1 ready item touches write scopes a live lease holds (scope held (eeeeeeee): repo:web, held by worker "w3")`,
		`2 ready items do not carry every label asked for (ml)`,
		`1 ready item requires capabilities this claim did not offer: cuda, gpu`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
	if lines := client.WhyNotClaimed(items[2:4], client.ClaimRequest{Worker: "me"}, now, nil); len(lines) != 0 {
		t.Errorf("an item kept for this worker, or no longer kept, is no reason: %q", lines)
	}
}

// TestWhyNotClaimedBlamesWhatStoodInThisClaimsWay: an item the claim
// could not take for its labels or capabilities is told by those, even
// when its write scopes are held or it is kept for another worker; only
// an item the claim could take otherwise is blamed on the scope or the
// reservation, as a spent budget already was. A claim for label gpu was
// told "13 ready items touch write scopes a live lease holds" of items
// that carry no gpu label.
func TestWhyNotClaimedBlamesWhatStoodInThisClaimsWay(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	later := now.Add(10 * time.Minute)
	str := func(s string) *string { return &s }
	held := []client.ScopeHolder{{Worker: "w3", Scopes: []string{"repo:web"}}}
	items := []client.Item{
		{ID: "aaaaaaaa-0000-0000-0000-000000000000", Title: "web, held", State: client.StateReady, BlockedBy: client.BlockedBy{Scopes: held}},
		{ID: "aaaaaaab-0000-0000-0000-000000000000", Title: "web, held, needs go", State: client.StateReady, Labels: []string{"gpu"},
			Requires: []string{"go"}, BlockedBy: client.BlockedBy{Scopes: held}},
		{ID: "bbbbbbbb-0000-0000-0000-000000000000", Title: "kept for w2", State: client.StateReady,
			BlockedBy: client.BlockedBy{ReservedFor: str("w2"), ReservedUntil: &later}},
	}
	got := client.WhyNotClaimed(items, client.ClaimRequest{Worker: "me", Labels: []string{"gpu"}, Capabilities: []string{"cuda"}}, now, nil)
	want := []string{
		`2 ready items do not carry every label asked for (gpu)`,
		`1 ready item requires capabilities this claim did not offer: go`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
