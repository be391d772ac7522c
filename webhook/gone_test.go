package webhook_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestDeliverGoneDisables: a receiver that answers 410 Gone says it wants
// no more deliveries (Standard Webhooks: the sender disables the
// endpoint). The delivery fails, the webhook is disabled at once with
// reason gone, and the events after it wait for someone to enable it
// instead of each being sent to the receiver that asked to stop. Before,
// a 410 only failed that one delivery and every later event was sent and
// refused again.
func TestDeliverGoneDisables(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusGone) })
	c := s.webhook(t, webhook.New{URL: rc.URL})
	other := newReceiver(t, nil)
	o := s.webhook(t, webhook.New{URL: other.URL})

	s.appendEvents(t, 1, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return s.settled(t, c.ID) && s.settled(t, o.ID) })
	ds := s.deliveries(t, c.ID)
	if len(ds) != 1 || ds[0].State != webhook.StateFailed || ds[0].LastStatus == nil || *ds[0].LastStatus != http.StatusGone {
		t.Fatalf("after a 410: %+v, want one failed delivery", ds)
	}
	w, err := s.hooks.Get(ctx, s.project, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.Enabled || w.DisabledReason == nil || *w.DisabledReason != webhook.ReasonGone || w.DisabledAt == nil || !w.DisabledGone() {
		t.Fatalf("after a 410 the webhook is %+v, want disabled with reason %q", w, webhook.ReasonGone)
	}
	if ws, err := s.hooks.Disabled(ctx, s.project); err != nil || len(ws) != 1 || ws[0].ID != c.ID {
		t.Fatalf("disabled webhooks (the web UI's notice) %+v, %v", ws, err)
	}

	// The next event: the other webhook gets it; the gone one does not.
	s.appendEvents(t, 1, events.ItemCreated)
	runUntil(t, d, func() bool { return len(other.ids()) == 2 })
	if r := d.RunOnce(ctx); r.Err != nil || r.Attempts != 0 {
		t.Fatalf("a round after the 410: %+v", r)
	}
	if n := len(rc.got()); n != 1 {
		t.Fatalf("the receiver that answered 410 got %d requests, want only the first", n)
	}
	if w, _ := s.hooks.Get(ctx, s.project, o.ID); !w.Enabled || w.FailingSince != nil {
		t.Fatalf("the other webhook: %+v", w)
	}
}
