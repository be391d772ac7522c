package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestIdleWithoutWebhooks: while no webhook is enabled, the delivery loop
// looks for work every IdlePoll, not every Poll: with the defaults a
// server nobody configured webhooks on sent two statements every 50 ms
// for nothing. A webhook created through the Service that OnEnabled ties
// to the loop wakes it at once, and from then on it polls every Poll.
func TestIdleWithoutWebhooks(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	const poll = 5 * time.Millisecond
	d := s.deliverer(webhook.DelivererConfig{Poll: poll, IdlePoll: time.Hour, Clock: clock.Database{}})
	s.hooks.OnEnabled(d.Wake)
	d.TestSignals.Round.Init()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Start(ctx)
	defer d.Stop()

	if r := d.TestSignals.Round.Wait(t); r.Err != nil || !r.NoWebhooks || r.Attempts != 0 {
		t.Fatalf("first round with no webhook: %+v, want NoWebhooks and nothing attempted", r)
	}
	// At Poll, 100 rounds would run in this time; at IdlePoll, none.
	if r, ok := d.TestSignals.Round.Within(500 * time.Millisecond); ok {
		t.Fatalf("a round within 500 ms of an idle one (%+v): the loop kept polling every Poll with no webhook enabled", r)
	}

	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL + "/hook"})
	if r := d.TestSignals.Round.Wait(t); r.Err != nil || r.NoWebhooks {
		t.Fatalf("round after a webhook was created: %+v, want one that sees it", r)
	}
	// Enabled webhooks: the loop is back at Poll (within the signal's
	// wait, far below IdlePoll).
	for i := range 3 {
		if r := d.TestSignals.Round.Wait(t); r.NoWebhooks {
			t.Fatalf("round %d with a webhook enabled: %+v", i, r)
		}
	}
}
