package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestStopMidAttemptChargesTheReceiverNothing: stopping a replica while
// its attempt waits for a slow receiver gives the delivery back as if the
// attempt had never started: no attempt recorded, the webhook's run of
// failures left as it was, and another replica sends it again. The cut
// attempt used to be recorded as a failure of the receiver; here the
// webhook had been failing for a day, so a deploy's restart disabled a
// receiver that was only slow to answer.
func TestStopMidAttemptChargesTheReceiverNothing(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()

	// The first request fails, the second waits until the attempt is
	// cut, the ones after succeed.
	arrived, ended := make(chan struct{}, 1), make(chan struct{})
	var requests atomic.Int32
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch requests.Add(1) {
		case 1:
			w.WriteHeader(http.StatusBadGateway)
		case 2:
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-ended:
			}
		}
	}))
	t.Cleanup(rc.Close)
	t.Cleanup(func() { close(ended) })
	c := s.webhook(t, webhook.New{URL: rc.URL})

	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clk := clock.NewStub(start)
	var obs observed
	cfg := webhook.DelivererConfig{Clock: clk, RetryFor: 72 * time.Hour, Timeout: time.Minute, Observe: obs.add}
	s.appendEvents(t, 1, events.ItemCreated)
	runUntil(t, s.deliverer(cfg), func() bool { return requests.Load() == 1 })

	// A day later the receiver is slow, and the replica attempting it is
	// stopped mid-attempt.
	clk.Advance(24 * time.Hour)
	stopping := s.deliverer(cfg)
	stopping.Start(ctx)
	<-arrived
	stopping.Stop()

	w, err := s.hooks.Get(ctx, s.project, c.ID)
	if err != nil || !w.Enabled || w.FailingSince == nil || !w.FailingSince.Equal(start) {
		t.Fatalf("after a stop cut an attempt: %+v, %v; want enabled, failing since the first failure", w, err)
	}
	ds := s.deliveries(t, c.ID)
	if len(ds) != 1 || ds[0].State != webhook.StatePending || ds[0].Attempts != 1 ||
		ds[0].LastStatus == nil || *ds[0].LastStatus != http.StatusBadGateway || ds[0].LastError != nil {
		t.Fatalf("the delivery after the cut attempt: %+v; want pending as its first attempt left it", ds)
	}
	var recorded int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM webhook_attempts WHERE project_id = $1 AND webhook_id = $2",
		s.project, c.ID).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != 1 {
		t.Fatalf("%d attempts recorded, want only the first (the cut one is not)", recorded)
	}
	as := obs.all()
	if len(as) != 2 || !as[1].Released || as[1].State != "" || as[1].Disabled {
		t.Fatalf("observed %+v; want the cut attempt released, unrecorded", as)
	}

	// Another replica sends it again at once (no lock to wait out), as
	// attempt 2, and the success ends the run of failures.
	runUntil(t, s.deliverer(cfg), func() bool { return s.settled(t, c.ID) })
	ds = s.deliveries(t, c.ID)
	if ds[0].State != webhook.StateDelivered || ds[0].Attempts != 2 || requests.Load() != 3 {
		t.Fatalf("after another replica's round: %+v, %d requests; want delivered by attempt 2", ds[0], requests.Load())
	}
	if w, _ := s.hooks.Get(ctx, s.project, c.ID); w.FailingSince != nil {
		t.Fatalf("after the success: failing since %v", w.FailingSince)
	}
}
