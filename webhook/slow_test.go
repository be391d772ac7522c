package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestSlowReceiverHoldsOnlyItsOwnAttempt: a receiver that takes its time
// holds the slot of its own attempt, not the delivery loop. An event for
// another webhook, written while that attempt is in flight, reaches its
// receiver before the slow attempt ends. The loop used to wait for every
// attempt of a round before it fanned out or claimed again, so one slow
// or hanging receiver (up to --webhooks-timeout, 10 s by default, per
// round) delayed the deliveries of every webhook of every project on its
// replica.
func TestSlowReceiverHoldsOnlyItsOwnAttempt(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)

	// The slow receiver answers its first request when the test lets it,
	// or when the attempt gives up (Timeout); a retry is answered at once.
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	var slowRequests atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slowRequests.Add(1) > 1 {
			return
		}
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	// slowEnded: the deliverer has ended the slow receiver's first
	// attempt (answered or given up), as its Observe is told.
	var slowEnded atomic.Bool
	fastHit := make(chan bool, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case fastHit <- !slowEnded.Load():
		default:
		}
	}))
	t.Cleanup(fast.Close)

	slowHook := s.webhook(t, webhook.New{URL: slow.URL, EventTypes: []string{events.ItemCreated}})
	s.webhook(t, webhook.New{URL: fast.URL, EventTypes: []string{events.LeaseGranted}})

	// The attempt's bound is what the old loop waited for before the
	// fast event's turn; the new one never reaches it.
	d := s.deliverer(webhook.DelivererConfig{Timeout: 30 * time.Second, Observe: func(a webhook.Attempt) {
		if a.WebhookID == slowHook.ID {
			slowEnded.Store(true)
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Start(ctx)
	defer d.Stop()
	defer close(release) // before Stop: the slow attempt ends

	s.appendEvents(t, 1, events.ItemCreated)
	<-arrived
	s.appendEvents(t, 1, events.LeaseGranted)
	if held := <-fastHit; !held {
		t.Fatal("the fast receiver got its event only after the slow receiver's attempt ended: one slow receiver held every delivery of the replica")
	}
}

// TestSuccessRecordedBeforeTheClaimsSlowestAttempt: a delivery that
// succeeded is recorded as delivered while another attempt of the same
// claim (another webhook of the project, same event) still waits for its
// receiver. The successes of a claim used to be recorded only once its
// last attempt had ended: the receiver had its event, but its record said
// pending for up to --webhooks-timeout (in the API, the CLI and the web
// page of deliveries), and a replica killed in that window sent it again.
func TestSuccessRecordedBeforeTheClaimsSlowestAttempt(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)

	release := make(chan struct{})
	var slowRequests atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slowRequests.Add(1) > 1 {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(fast.Close)

	slowHook := s.webhook(t, webhook.New{URL: slow.URL})
	fastHook := s.webhook(t, webhook.New{URL: fast.URL})

	// Observe hears of a success once it is recorded (State delivered).
	var slowEnded atomic.Bool
	fastRecorded := make(chan webhook.Attempt, 1)
	d := s.deliverer(webhook.DelivererConfig{Timeout: 30 * time.Second, Observe: func(a webhook.Attempt) {
		switch a.WebhookID {
		case slowHook.ID:
			slowEnded.Store(true)
		case fastHook.ID:
			if slowEnded.Load() {
				a.State = "after the slow attempt"
			}
			select {
			case fastRecorded <- a:
			default:
			}
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Start(ctx)
	defer d.Stop()
	defer close(release)

	s.appendEvents(t, 1, events.ItemCreated)
	if a := <-fastRecorded; a.State != webhook.StateDelivered {
		t.Fatalf("the fast receiver's attempt was recorded %q: want delivered while the slow receiver still holds its request", a.State)
	}
	ds := s.deliveries(t, fastHook.ID)
	if len(ds) != 1 || ds[0].State != webhook.StateDelivered {
		t.Fatalf("the fast webhook's deliveries %+v, want one delivered", ds)
	}
}
