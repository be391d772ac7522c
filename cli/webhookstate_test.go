package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWebhookStateSaysThePause: `webhooks ls` says that delivery paused a
// webhook whose receiver keeps failing, until when and after how many
// failures, and says nothing of a pause that has passed.
func TestWebhookStateSaysThePause(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	since, until, passed := now.Add(-3*time.Minute), now.Add(20*time.Minute), now.Add(-time.Second)
	cases := []struct {
		name string
		w    client.Webhook
		want string
		not  string
	}{
		{"Enabled", client.Webhook{Enabled: true}, "enabled", "paused"},
		{"Failing", client.Webhook{Enabled: true, FailingSince: &since, ConsecutiveFailures: 2}, "failing since", "paused"},
		{"Paused", client.Webhook{Enabled: true, FailingSince: &since, ConsecutiveFailures: 6, PausedUntil: &until},
			"paused until " + fmtTime(until) + " after 6 failures in a row", ""},
		{"PausePassed", client.Webhook{Enabled: true, FailingSince: &since, ConsecutiveFailures: 6, PausedUntil: &passed},
			"failing since", "paused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := webhookState(c.w, now)
			if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
				t.Fatalf("state %q: want it to say %q and not %q", got, c.want, c.not)
			}
		})
	}
}
