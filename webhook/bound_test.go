package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
)

// hanging is a receiver that answers no request until the test ends (or
// the attempt gives up), and tells how many it holds at once.
type hanging struct {
	*httptest.Server
	mu       sync.Mutex
	inFlight int
	most     int
	total    int
	// arrived gets the number of requests held after each arrival; over
	// is closed once more than bound are held at once.
	arrived chan int
	over    chan struct{}
	once    sync.Once
}

func newHanging(t *testing.T, bound int) *hanging {
	t.Helper()
	h := &hanging{arrived: make(chan int, 1000), over: make(chan struct{})}
	release := make(chan struct{})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.inFlight++
		h.total++
		h.most = max(h.most, h.inFlight)
		n := h.inFlight
		h.mu.Unlock()
		if n > bound {
			h.once.Do(func() { close(h.over) })
		}
		h.arrived <- n
		select {
		case <-release:
		case <-r.Context().Done():
		}
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}))
	// Cleanups run last first: the held requests end, then the server
	// closes.
	t.Cleanup(h.Close)
	t.Cleanup(func() { close(release) })
	return h
}

// counts are the most requests held at once and the requests received.
func (h *hanging) counts() (most, total int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most, h.total
}

// counter is a receiver that answers at once and closes done once it has
// had want distinct events.
type counter struct {
	*httptest.Server
	mu   sync.Mutex
	ids  map[string]bool
	done chan struct{}
}

func newCounter(t *testing.T, want int) *counter {
	t.Helper()
	c := &counter{ids: map[string]bool{}, done: make(chan struct{})}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ids[r.Header.Get("webhook-id")] = true
		if len(c.ids) == want {
			close(c.done)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

// TestHangingReceiverHoldsAtMostItsBound: a receiver that hangs with many
// deliveries due holds DefaultPerWebhook attempt slots, no more, while the
// other webhooks' events (its project's and another project's) reach
// their receivers through the slots left. The loop used to give such a
// receiver every free slot of the replica (rate x timeout of them), and
// every other webhook waited for its attempts to time out.
func TestHangingReceiverHoldsAtMostItsBound(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	bound := webhook.DefaultPerWebhook
	stuck := newHanging(t, bound)
	s.webhook(t, webhook.New{URL: stuck.URL, EventTypes: []string{events.ItemCreated}})

	// Healthy webhooks: one of the same project, one of another project.
	const healthyEvents = 5
	near := newCounter(t, healthyEvents)
	s.webhook(t, webhook.New{URL: near.URL, EventTypes: []string{events.LeaseGranted}})
	other := deliverySetup{pool: s.pool, project: mustProject(t, s.pool), hooks: s.hooks}
	far := newCounter(t, healthyEvents)
	other.webhook(t, webhook.New{URL: far.URL})

	// Five times the bound due, under a timeout the test never reaches:
	// the slots the stuck receiver holds are what it took.
	s.appendEvents(t, 5*bound, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{Concurrency: 3 * bound, Timeout: time.Minute})
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go d.Start(lctx)
	defer d.Stop()

	for held := 0; held < bound; {
		select {
		case held = <-stuck.arrived:
		case <-stuck.over:
			most, _ := stuck.counts()
			t.Fatalf("the hanging receiver holds %d requests at once, want at most %d", most, bound)
		}
	}
	s.appendEvents(t, healthyEvents, events.LeaseGranted)
	other.appendEvents(t, healthyEvents, events.ItemCreated)
	for _, c := range []*counter{near, far} {
		select {
		case <-c.done:
		case <-stuck.over:
			most, _ := stuck.counts()
			t.Fatalf("the hanging receiver holds %d requests at once, want at most %d", most, bound)
		}
	}
	// By now the loop has had free slots and the stuck webhook's
	// deliveries due over several rounds: it took none past the bound.
	if most, total := stuck.counts(); most != bound || total != bound {
		t.Fatalf("the hanging receiver got %d requests, %d at most at once; want %d, all held", total, most, bound)
	}
}

// TestHangingReceiverBoundAcrossReplicas: the bound is one webhook's over
// every replica, not each replica's: two deliverers on one database (each
// with slots enough for every due delivery) hold DefaultPerWebhook
// requests of a hanging receiver between them.
func TestHangingReceiverBoundAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	bound := webhook.DefaultPerWebhook
	stuck := newHanging(t, bound)
	s.webhook(t, webhook.New{URL: stuck.URL, EventTypes: []string{events.ItemCreated}})
	healthy := newCounter(t, 1)
	s.webhook(t, webhook.New{URL: healthy.URL, EventTypes: []string{events.LeaseGranted}})
	s.appendEvents(t, 6*bound, events.ItemCreated)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		d := s.deliverer(webhook.DelivererConfig{Concurrency: 8 * bound, Timeout: time.Minute})
		go d.Start(ctx)
		defer d.Stop()
	}
	for held := 0; held < bound; {
		select {
		case held = <-stuck.arrived:
		case <-stuck.over:
			most, _ := stuck.counts()
			t.Fatalf("two replicas hold %d requests of the hanging receiver at once, want at most %d", most, bound)
		}
	}
	// A later event of another webhook is delivered: both replicas have
	// had rounds with the stuck webhook's deliveries due and slots free.
	s.appendEvents(t, 1, events.LeaseGranted)
	select {
	case <-healthy.done:
	case <-stuck.over:
		most, _ := stuck.counts()
		t.Fatalf("two replicas hold %d requests of the hanging receiver at once, want at most %d", most, bound)
	}
	if most, total := stuck.counts(); most != bound || total != bound {
		t.Fatalf("the hanging receiver got %d requests, %d at most at once; want %d, all held", total, most, bound)
	}
}

// TestFailingReceiverIsPausedAsAWhole: a receiver that keeps failing is
// backed off as a whole, not one delivery at a time. After three failures
// in a row the webhook waits (Backoff of the run's failures past the
// third), its deliveries never tried included; once the wait passes one
// attempt tries the receiver, and its success lets the rest through, none
// lost. Each new event of a dead receiver used to be tried at once, so it
// took an attempt (a slot for up to --webhooks-timeout) per event.
func TestFailingReceiverIsPausedAsAWhole(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusServiceUnavailable) })
	hook := s.webhook(t, webhook.New{URL: rc.URL})
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clk := clock.NewStub(start)
	// Each delivery's own retry comes a second after its failure; the
	// webhook's pause is minutes.
	var obs observed
	d := s.deliverer(webhook.DelivererConfig{Clock: clk, Observe: obs.add,
		Backoff: func(n int) time.Duration { return time.Duration(n) * time.Second }})
	const n = 3 * webhook.DefaultPerWebhook
	s.appendEvents(t, n, events.ItemCreated)

	runUntil(t, d, func() bool { return len(rc.got()) >= webhook.DefaultPerWebhook })
	if got := len(rc.got()); got != webhook.DefaultPerWebhook {
		t.Fatalf("the first round sent %d requests, want %d (the bound)", got, webhook.DefaultPerWebhook)
	}
	// The third failure in a row paused the webhook, the fourth made the
	// pause longer: each is told (the metrics count them).
	paused := 0
	for _, a := range obs.all() {
		if a.Paused {
			paused++
		}
	}
	if paused != webhook.DefaultPerWebhook-2 {
		t.Fatalf("%d of the first %d failures paused the webhook, want %d: %+v", paused, webhook.DefaultPerWebhook,
			webhook.DefaultPerWebhook-2, obs.all())
	}
	// DefaultPerWebhook failures in a row: paused for
	// Backoff(DefaultPerWebhook-2), that many seconds here. A second on,
	// every delivery is due (the failed ones retried, the others never
	// tried), and none is attempted.
	pause := time.Duration(webhook.DefaultPerWebhook-2) * time.Second
	clk.Advance(time.Second)
	if r := d.RunOnce(ctx); r.Err != nil || r.Attempts != 0 {
		t.Fatalf("a round while the failing webhook is paused: %+v, want no attempt", r)
	}
	if got := len(rc.got()); got != webhook.DefaultPerWebhook {
		t.Fatalf("the receiver got %d requests while paused, want %d", got, webhook.DefaultPerWebhook)
	}
	// The pause passed: one attempt tries the receiver, which has come
	// back; its success lets the rest through.
	rc.setAnswer(nil)
	clk.Advance(pause)
	if r := d.RunOnce(ctx); r.Err != nil || r.Attempts != 1 {
		t.Fatalf("the round after the pause: %+v, want one attempt", r)
	}
	runUntil(t, d, func() bool { return s.settled(t, hook.ID) })
	ds := s.deliveries(t, hook.ID)
	if len(ds) != n {
		t.Fatalf("%d deliveries, want %d", len(ds), n)
	}
	for _, dl := range ds {
		if dl.State != webhook.StateDelivered {
			t.Fatalf("delivery %+v, want delivered", dl)
		}
	}
	if ids := rc.ids(); len(ids) != n {
		t.Fatalf("the receiver got %d distinct events, want %d", len(ids), n)
	}
	w, err := s.hooks.Get(ctx, s.project, hook.ID)
	if err != nil || w.FailingSince != nil {
		t.Fatalf("after the success: %+v, %v; want its run of failures ended", w, err)
	}
}

// TestEnablingEndsThePause: a person who enables a webhook (again, even
// while it is enabled: `workgraph webhooks enable`) ends its run of
// failures and the pause it brought, and its deliveries go at once, as
// many at a time as the bound allows.
func TestEnablingEndsThePause(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusInternalServerError) })
	hook := s.webhook(t, webhook.New{URL: rc.URL})
	clk := clock.NewStub(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	d := s.deliverer(webhook.DelivererConfig{Clock: clk, Backoff: func(n int) time.Duration { return time.Duration(n) * time.Hour }})
	s.appendEvents(t, 2*webhook.DefaultPerWebhook, events.ItemCreated)
	runUntil(t, d, func() bool { return len(rc.got()) >= webhook.DefaultPerWebhook })
	if r := d.RunOnce(ctx); r.Err != nil || r.Attempts != 0 {
		t.Fatalf("a round while the failing webhook is paused: %+v, want no attempt", r)
	}

	rc.setAnswer(nil)
	on := true
	if _, err := webhook.NewService(s.pool, clk, true).Update(ctx, s.project, hook.ID, webhook.Change{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	if r := d.RunOnce(ctx); r.Err != nil || r.Attempts != webhook.DefaultPerWebhook {
		t.Fatalf("the round after enabling: %+v, want %d attempts (the bound)", r, webhook.DefaultPerWebhook)
	}
	runUntil(t, d, func() bool { return s.settled(t, hook.ID) })
}
