package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// hit is one request a receiver got.
type hit struct {
	id, timestamp, signature string
	body                     []byte
}

// receiver is a webhook endpoint on loopback that records every request
// and answers with answer(n) for its n-th request (from 1).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []hit
	answer func(w http.ResponseWriter, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, n int)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"),
			r.Header.Get("webhook-signature"), b})
		n, answer := len(rc.hits), rc.answer
		rc.mu.Unlock()
		if answer != nil {
			answer(w, n)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// setAnswer changes how the receiver answers from its next request.
func (rc *receiver) setAnswer(answer func(w http.ResponseWriter, n int)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = answer
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// ids are the distinct webhook-ids received, with how often each came.
func (rc *receiver) ids() map[string]int {
	out := map[string]int{}
	for _, h := range rc.got() {
		out[h.id]++
	}
	return out
}

// deliverySetup is a fresh database (delivery commits and reads the log's
// horizon, so a rolled-back transaction cannot hold it), a project and the
// services on it.
type deliverySetup struct {
	pool    *pgxpool.Pool
	project uuid.UUID
	hooks   *webhook.Service
}

func setupDelivery(t *testing.T) deliverySetup {
	t.Helper()
	pool := dbtest.New(t)
	return deliverySetup{pool: pool, project: mustProject(t, pool), hooks: webhook.NewService(pool, nil, true)}
}

// observed records the attempts a Deliverer's Observe is told of.
type observed struct {
	mu   sync.Mutex
	list []webhook.Attempt
}

func (o *observed) add(a webhook.Attempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, a)
}

func (o *observed) all() []webhook.Attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]webhook.Attempt(nil), o.list...)
}

func (s deliverySetup) deliverer(cfg webhook.DelivererConfig) *webhook.Deliverer {
	cfg.AllowPrivate = true
	if cfg.Backoff == nil {
		cfg.Backoff = func(int) time.Duration { return 0 }
	}
	return webhook.NewDeliverer(s.pool, cfg)
}

func (s deliverySetup) webhook(t *testing.T, in webhook.New) webhook.Created {
	t.Helper()
	c, err := s.hooks.Create(context.Background(), s.project, in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appendEvents commits n events of the project, each in its own
// transaction, and returns their numbers.
func (s deliverySetup) appendEvents(t *testing.T, n int, typ string) []int64 {
	t.Helper()
	var out []int64
	for i := range n {
		item := uuid.New()
		seq, err := events.Append(context.Background(), s.pool, events.New{Project: s.project, Type: typ,
			Actor: "token:test", ItemID: &item, Payload: map[string]any{"i": i}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	return out
}

// runUntil runs rounds of d until done holds. The bound is a safety net
// for a broken loop, not a measure of speed: it is generous because a
// long transaction of another test binary on the same PostgreSQL server
// holds the event log's horizon back (ErrHorizonDelayed, not a failure).
func runUntil(t *testing.T, d *webhook.Deliverer, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("delivery did not get there within 3 min")
		}
		if r := d.RunOnce(context.Background()); r.Err != nil && !errors.Is(r.Err, webhook.ErrHorizonDelayed) {
			t.Fatal(r.Err)
		}
	}
}

func (s deliverySetup) deliveries(t *testing.T, id uuid.UUID) []webhook.Delivery {
	t.Helper()
	ds, err := s.hooks.Deliveries(context.Background(), s.project, id, 0, webhook.MaxDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// settled reports whether the webhook has deliveries and none is pending.
func (s deliverySetup) settled(t *testing.T, id uuid.UUID) bool {
	ds := s.deliveries(t, id)
	for _, d := range ds {
		if d.State == webhook.StatePending {
			return false
		}
	}
	return len(ds) > 0
}

func TestDeliverSigned(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	c := s.webhook(t, webhook.New{URL: rc.URL + "/hook"})
	seqs := s.appendEvents(t, 3, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return len(rc.ids()) == 3 })

	for i, h := range rc.got() {
		if !verify(t, c.Secret, h.id, h.timestamp, h.body, h.signature) {
			t.Errorf("request %d (%s): the independent check refused signature %q", i, h.id, h.signature)
		}
		var b struct {
			Type      string    `json:"type"`
			Timestamp time.Time `json:"timestamp"`
			Data      struct {
				ProjectID uuid.UUID       `json:"project_id"`
				Seq       int64           `json:"seq"`
				Actor     string          `json:"actor"`
				Payload   json.RawMessage `json:"payload"`
			} `json:"data"`
		}
		if err := json.Unmarshal(h.body, &b); err != nil {
			t.Fatalf("body %s: %v", h.body, err)
		}
		if want := fmt.Sprintf("evt_%s_%d", s.project, b.Data.Seq); h.id != want {
			t.Errorf("webhook-id %s, want %s", h.id, want)
		}
		if b.Type != events.ItemCreated || b.Data.ProjectID != s.project || b.Data.Actor != "token:test" || b.Timestamp.IsZero() {
			t.Errorf("body %s", h.body)
		}
	}
	ds := s.deliveries(t, c.ID)
	if len(ds) != 3 {
		t.Fatalf("%d delivery records, want one per event (3)", len(ds))
	}
	for i, dl := range ds {
		if dl.Seq != seqs[2-i] || dl.State != webhook.StateDelivered || dl.Attempts != 1 ||
			dl.LastStatus == nil || *dl.LastStatus != 200 || dl.FinishedAt == nil || dl.LastLatency == nil {
			t.Errorf("delivery %d: %+v", i, dl)
		}
	}
}

func TestDeliverOnlyTypesWanted(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	c := s.webhook(t, webhook.New{URL: rc.URL, EventTypes: []string{events.LeaseGranted}})
	s.appendEvents(t, 2, events.ItemCreated)
	want := s.appendEvents(t, 1, events.LeaseGranted)
	s.appendEvents(t, 2, events.ItemUpdated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return len(rc.ids()) == 1 })
	// The cursor passed the unwanted events: another round sends nothing.
	if r := d.RunOnce(context.Background()); r.Err != nil || r.FannedOut != 0 || r.Attempts != 0 {
		t.Fatalf("a round after the wanted event: %+v", r)
	}
	ds := s.deliveries(t, c.ID)
	if len(ds) != 1 || ds[0].Seq != want[0] {
		t.Fatalf("deliveries %+v, want only the lease.granted event %d", ds, want[0])
	}
}

func TestDeliverBacklogAfterRecovery(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		if down.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
		}
	})
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 5, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	// Every event is tried (and refused) at least twice while the receiver is down.
	runUntil(t, d, func() bool { return len(rc.got()) >= 10 && len(rc.ids()) == 5 })
	for _, dl := range s.deliveries(t, c.ID) {
		if dl.State != webhook.StatePending || dl.LastStatus == nil || *dl.LastStatus != 503 ||
			dl.LastResponse == nil || !strings.Contains(*dl.LastResponse, "maintenance") {
			t.Fatalf("while the receiver is down: %+v", dl)
		}
	}
	w, _ := s.hooks.Get(context.Background(), s.project, c.ID)
	if w.FailingSince == nil {
		t.Fatal("a failing webhook has no failing_since")
	}
	down.Store(false)
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	ds := s.deliveries(t, c.ID)
	if len(ds) != 5 {
		t.Fatalf("%d deliveries, want 5", len(ds))
	}
	for _, dl := range ds {
		if dl.Attempts < 2 || *dl.LastStatus != 200 {
			t.Errorf("recovered delivery %+v: want delivered after at least two attempts", dl)
		}
	}
	if w, _ := s.hooks.Get(context.Background(), s.project, c.ID); w.FailingSince != nil || !w.Enabled {
		t.Fatalf("after recovery: %+v, want enabled and not failing", w)
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		w.Header().Set("Retry-After", "600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 1, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return len(rc.got()) == 1 })
	ds := s.deliveries(t, c.ID)
	if len(ds) != 1 || ds[0].State != webhook.StatePending || ds[0].NextAttemptAt == nil {
		t.Fatalf("after a 429: %+v", ds)
	}
	var now time.Time
	if err := s.pool.QueryRow(context.Background(), "SELECT now()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if wait := ds[0].NextAttemptAt.Sub(now); wait < 590*time.Second {
		t.Fatalf("next attempt in %s, want Retry-After's 600 s honoured", wait)
	}
	// Not due: another round does not try it.
	if r := d.RunOnce(context.Background()); r.Attempts != 0 {
		t.Fatalf("a round before Retry-After passed attempted %d", r.Attempts)
	}
}

func TestDeliverClientErrorFails(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { http.Error(w, "bad signature", http.StatusBadRequest) })
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 1, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	ds := s.deliveries(t, c.ID)
	if ds[0].State != webhook.StateFailed || ds[0].Attempts != 1 || *ds[0].LastStatus != 400 {
		t.Fatalf("after a 400: %+v, want failed after one attempt", ds[0])
	}
	if r := d.RunOnce(context.Background()); r.Attempts != 0 || len(rc.got()) != 1 {
		t.Fatalf("a failed delivery was tried again")
	}
}

func TestDeliverFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {
		w.Header().Set("Location", target.URL+"/elsewhere")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 1, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	dl := s.deliveries(t, c.ID)[0]
	if dl.State != webhook.StateFailed || *dl.LastStatus != 307 || dl.LastError == nil || !strings.Contains(*dl.LastError, "redirect") {
		t.Fatalf("after a redirect: %+v", dl)
	}
	if n := len(target.got()); n != 0 {
		t.Fatalf("the redirect's target got %d requests, want none", n)
	}
}

func TestDeliverRefusesPrivateAddressAtDial(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	// The webhook was accepted (say, by a name that resolved elsewhere
	// then); the delivering replica does not allow private addresses.
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 1, events.ItemCreated)
	var obs observed
	d := webhook.NewDeliverer(s.pool, webhook.DelivererConfig{Observe: obs.add})
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	dl := s.deliveries(t, c.ID)[0]
	if dl.State != webhook.StateFailed || dl.LastStatus != nil || dl.LastError == nil || !strings.Contains(*dl.LastError, "refused") {
		t.Fatalf("a delivery to loopback without the flag: %+v", dl)
	}
	// Observed as refused by the guard, with no request sent.
	if as := obs.all(); len(as) != 1 || !as[0].Refused || as[0].Sent || as[0].State != webhook.StateFailed || as[0].Disabled {
		t.Fatalf("observed %+v, want one refused attempt that sent nothing", as)
	}
	if n := len(rc.got()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests, want none", n)
	}
}

func TestDisabledAfterADayOfFailures(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusBadGateway) })
	c := s.webhook(t, webhook.New{URL: rc.URL})
	start := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	clk := clock.NewStub(start)
	var obs observed
	d := s.deliverer(webhook.DelivererConfig{Clock: clk, Backoff: func(int) time.Duration { return time.Hour }, Observe: obs.add})
	s.appendEvents(t, 1, events.ItemCreated)
	runUntil(t, d, func() bool { return len(rc.got()) == 1 })

	// Retried every hour; after 23 hours it is still enabled.
	for h := 1; h <= 23; h++ {
		clk.Advance(time.Hour)
		runUntil(t, d, func() bool { return len(rc.got()) == h+1 })
	}
	w, err := s.hooks.Get(ctx, s.project, c.ID)
	if err != nil || !w.Enabled || w.FailingSince == nil || !w.FailingSince.Equal(start) {
		t.Fatalf("after 23 h of failures: %+v, %v; want enabled, failing since the first", w, err)
	}
	clk.Advance(time.Hour)
	runUntil(t, d, func() bool { return len(rc.got()) == 25 })
	w, _ = s.hooks.Get(ctx, s.project, c.ID)
	if w.Enabled || w.DisabledReason == nil || *w.DisabledReason != webhook.ReasonFailing || w.DisabledAt == nil {
		t.Fatalf("after a day of failures: %+v, want disabled as failing", w)
	}
	if dl := s.deliveries(t, c.ID)[0]; dl.State != webhook.StateFailed || dl.Attempts != 25 {
		t.Fatalf("the day-old delivery: %+v, want failed after 25 attempts", dl)
	}
	// Observed: 24 retries that sent a request, then the failure that
	// disabled the webhook (told once).
	as := obs.all()
	if len(as) != 25 {
		t.Fatalf("observed %d attempts, want 25", len(as))
	}
	for i, a := range as {
		last := i == len(as)-1
		want := webhook.StatePending
		if last {
			want = webhook.StateFailed
		}
		if a.State != want || a.Disabled != last || !a.Sent || a.Refused || a.Status != http.StatusBadGateway {
			t.Fatalf("attempt %d observed as %+v, want %s, disabled %v, sent", i+1, a, want, last)
		}
	}
	dis, err := s.hooks.Disabled(ctx, s.project)
	if err != nil || len(dis) != 1 || dis[0].ID != c.ID {
		t.Fatalf("Disabled = %+v, %v", dis, err)
	}
	// A disabled webhook gets nothing, and its later events wait.
	s.appendEvents(t, 1, events.ItemCreated)
	clk.Advance(time.Hour)
	if r := d.RunOnce(ctx); (r.Err != nil && !errors.Is(r.Err, webhook.ErrHorizonDelayed)) || r.Attempts != 0 || r.FannedOut != 0 {
		t.Fatalf("a round with the webhook disabled: %+v", r)
	}
	// Enabled again by a person: the event that waited is delivered.
	rc.setAnswer(nil)
	on := true
	if _, err := webhook.NewService(s.pool, clk, true).Update(ctx, s.project, c.ID, webhook.Change{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, func() bool { return len(rc.got()) == 26 })
	if dis, _ := s.hooks.Disabled(ctx, s.project); len(dis) != 0 {
		t.Fatalf("after enabling, Disabled = %+v", dis)
	}
}

func TestDeliverSeveralReplicasOnce(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	c := s.webhook(t, webhook.New{URL: rc.URL})
	const n = 60
	s.appendEvents(t, n, events.ItemCreated)
	var wg sync.WaitGroup
	for range 3 {
		d := s.deliverer(webhook.DelivererConfig{Concurrency: 4})
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(3 * time.Minute)
			for len(rc.ids()) < n && time.Now().Before(deadline) {
				if r := d.RunOnce(context.Background()); r.Err != nil && !errors.Is(r.Err, webhook.ErrHorizonDelayed) {
					t.Error(r.Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	ids := rc.ids()
	if len(ids) != n {
		t.Fatalf("%d events received, want %d", len(ids), n)
	}
	for id, k := range ids {
		if k != 1 {
			t.Errorf("%s received %d times by three replicas, want once", id, k)
		}
	}
	if ds := s.deliveries(t, c.ID); len(ds) != n {
		t.Fatalf("%d delivery records, want one per event (%d)", len(ds), n)
	}
}

func TestDeliverAttentionAsSlack(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL, Format: webhook.FormatSlack, EventTypes: []string{events.AttentionOpened}})
	r := mustRequest(t, s.pool, s.project, "Deploy to <prod> & tag it?")
	// The hold wrote its attention.opened event.
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "https://wg.example.com/",
		Attention: attention.NewService(s.pool, nil, attention.Config{})})
	runUntil(t, d, func() bool { return len(rc.got()) >= 1 })
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
			Elements []struct {
				URL string `json:"url"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	body := rc.got()[0].body
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "Deploy to &lt;prod&gt; &amp; tag it?") || !strings.Contains(m.Text, "Ship the release") {
		t.Fatalf("text %q: want the question (escaped, as mrkdwn) and the item", m.Text)
	}
	all := string(body)
	for _, want := range []string{"token:lead", "Deploy to &lt;prod&gt; &amp; tag it?",
		"https://wg.example.com/p/", "/inbox?req=" + r.ID.String() + "#req-" + r.ID.String(), "/items/" + r.ItemID.String()} {
		if !strings.Contains(all, want) {
			t.Errorf("the Slack body lacks %q: %s", want, body)
		}
	}
	if len(m.Blocks) != 3 || m.Blocks[2].Type != "actions" || len(m.Blocks[2].Elements) != 1 ||
		!strings.HasSuffix(m.Blocks[2].Elements[0].URL, "/inbox?req="+r.ID.String()+"#req-"+r.ID.String()) {
		t.Fatalf("blocks %+v: want the asker, the question, and a button to the answer page", m.Blocks)
	}
}

func TestDeliverAnswerLink(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	alice := "alice"
	s.webhook(t, webhook.New{URL: rc.URL, Recipient: &alice, EventTypes: []string{events.AttentionOpened}})
	att := attention.NewService(s.pool, nil, attention.Config{})
	links := webhook.NewAnswerLinks(s.pool, nil, att)
	if _, err := links.SetSettings(ctx, s.project, webhook.Settings{AnswerLinks: true}); err != nil {
		t.Fatal(err)
	}
	r := mustRequest(t, s.pool, s.project, "Merge it?")
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "http://wg.test", Attention: att, Links: links})
	runUntil(t, d, func() bool { return len(rc.got()) == 1 })
	var b struct {
		Data webhook.Message `json:"data"`
	}
	if err := json.Unmarshal(rc.got()[0].body, &b); err != nil {
		t.Fatal(err)
	}
	l := b.Data.Links
	if l == nil || b.Data.Attention == nil || b.Data.Attention.Question != "Merge it?" || l.AnswerLinkExpires == nil {
		t.Fatalf("message %+v: want the request and an answer link", b.Data)
	}
	prefix := "http://wg.test/answer/" + s.project.String() + "/"
	token, ok := strings.CutPrefix(l.AnswerLink, prefix)
	if !ok {
		t.Fatalf("answer link %q, want it under %s", l.AnswerLink, prefix)
	}
	res, err := links.Answer(ctx, s.project, token, r.ID, "yes")
	if err != nil || res.State != attention.StateResolved || *res.ResolvedBy != webhook.AnsweredBy("alice") {
		t.Fatalf("answering through the delivered link: %+v, %v", res, err)
	}
}

// TestDeliverNoAnswerLinkForActions: a request answered by an action, not
// words (a spent budget is raised, an uncertain outcome decided) gets no
// answer link: its message links the item page, where the action is.
func TestDeliverNoAnswerLinkForActions(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	alice := "alice"
	s.webhook(t, webhook.New{URL: rc.URL, Recipient: &alice, EventTypes: []string{events.AttentionOpened}})
	att := attention.NewService(s.pool, nil, attention.Config{})
	links := webhook.NewAnswerLinks(s.pool, nil, att)
	if _, err := links.SetSettings(ctx, s.project, webhook.Settings{AnswerLinks: true}); err != nil {
		t.Fatal(err)
	}
	it, err := graph.NewService(s.pool, nil).CreateItem(ctx, s.project, graph.NewItem{Title: "Budgeted", CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := att.Open(ctx, s.project, it.ID, attention.NewRequest{
		Question: "The budget is spent.", Blocking: true, Source: attention.SourceSystem,
		Reason: attention.ReasonBudgetExhausted, RequestedBy: "system",
	}); err != nil {
		t.Fatal(err)
	}
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "http://wg.test", Attention: att, Links: links})
	runUntil(t, d, func() bool { return len(rc.got()) == 1 })
	var b struct {
		Data webhook.Message `json:"data"`
	}
	if err := json.Unmarshal(rc.got()[0].body, &b); err != nil {
		t.Fatal(err)
	}
	l := b.Data.Links
	if l == nil || b.Data.Attention == nil || b.Data.Attention.Reason != attention.ReasonBudgetExhausted {
		t.Fatalf("message %+v: want the request and its links", b.Data)
	}
	if l.AnswerLink != "" || l.AnswerLinkExpires != nil {
		t.Fatalf("a budget_exhausted request got an answer link %q", l.AnswerLink)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM answer_links WHERE project_id = $1`, s.project).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d answer links issued (%v), want 0", n, err)
	}
}

// TestDeliveryBacklogInCensus: the census counts a project's deliveries
// due now (a failed attempt retried at once is due), of enabled webhooks
// only, and none once they are delivered.
func TestDeliveryBacklogInCensus(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	var name string
	if err := s.pool.QueryRow(ctx, `SELECT name FROM projects WHERE id = $1`, s.project).Scan(&name); err != nil {
		t.Fatal(err)
	}
	due := func() int64 {
		t.Helper()
		c, err := db.TakeCensus(ctx, s.pool)
		if err != nil {
			t.Fatal(err)
		}
		return c.DueDeliveries[name]
	}
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusBadGateway) })
	c := s.webhook(t, webhook.New{URL: rc.URL})
	s.appendEvents(t, 2, events.ItemCreated)
	d := s.deliverer(webhook.DelivererConfig{}) // retried at once: due again
	runUntil(t, d, func() bool { return len(rc.got()) >= 2 })
	if n := due(); n != 2 {
		t.Fatalf("after failed attempts, %d deliveries due, want 2", n)
	}
	off, on := false, true
	if _, err := s.hooks.Update(ctx, s.project, c.ID, webhook.Change{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if n := due(); n != 0 {
		t.Fatalf("with the webhook disabled, %d deliveries due, want 0", n)
	}
	rc.setAnswer(nil)
	if _, err := s.hooks.Update(ctx, s.project, c.ID, webhook.Change{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	if n := due(); n != 0 {
		t.Fatalf("after delivery, %d deliveries due, want 0", n)
	}
}

// countingHandler counts the log records of each level.
type countingHandler struct {
	mu     sync.Mutex
	levels map[slog.Level]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.levels[r.Level]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// TestDeliveryLoopBacksOffWhileDatabaseAway: while the database cannot be
// reached the loop waits longer after each failed round (doubling, up to
// seconds) and logs each at warn, instead of trying, and logging an
// error, every poll interval.
func TestDeliveryLoopBacksOffWhileDatabaseAway(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@/nowhere?host=/nonexistent-workgraph-socket-dir&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	logs := &countingHandler{levels: map[slog.Level]int{}}
	d := webhook.NewDeliverer(pool, webhook.DelivererConfig{Poll: 10 * time.Millisecond, Log: slog.New(logs)})
	d.Start(context.Background())
	time.Sleep(1500 * time.Millisecond) // a rate over a span of time
	d.Stop()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	// Each failed round logs once. Polling every 10 ms would make 150
	// rounds; doubling from 10 ms, 8.
	if rounds := logs.levels[slog.LevelWarn] + logs.levels[slog.LevelError]; rounds > 12 {
		t.Errorf("%d failed rounds logged in 1.5 s without a database, want at most 12 (backing off)", rounds)
	}
	if logs.levels[slog.LevelError] > 0 {
		t.Errorf("%d error lines for a database that is away (want warn)", logs.levels[slog.LevelError])
	}
}

// TestDeliverSlackEscapesEverywhere: what people and agents wrote (the
// question, the item's title) reaches Slack escaped in every field Slack
// reads as mrkdwn, the notification text included, so a question cannot
// mention the whole channel or dress up a link.
func TestDeliverSlackEscapesEverywhere(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL, Format: webhook.FormatSlack, EventTypes: []string{events.AttentionOpened}})
	mustRequest(t, s.pool, s.project, "<!channel> approve at <https://evil.example|the release page> & go")
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "https://wg.example.com/",
		Attention: attention.NewService(s.pool, nil, attention.Config{})})
	runUntil(t, d, func() bool { return len(rc.got()) >= 1 })
	var m struct {
		Text string `json:"text"`
	}
	body := rc.got()[0].body
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"<!channel>", "<https://evil.example", " & go"} {
		if strings.Contains(string(body), raw) {
			t.Errorf("the Slack body carries %q unescaped (text %q)", raw, m.Text)
		}
	}
	if !strings.Contains(m.Text, "&lt;!channel&gt; approve at &lt;https://evil.example|the release page&gt; &amp; go") {
		t.Errorf("text %q: want the question, escaped", m.Text)
	}
}

// TestRotateSecret: a rotation gives the webhook a new secret, shown
// once, and keeps the webhook and its history; during the grace every
// delivery is signed with both secrets (a receiver that still holds the
// old one accepts it), after it (here a grace of 0) with the new one only.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	c := s.webhook(t, webhook.New{URL: rc.URL + "/hook"})
	d := s.deliverer(webhook.DelivererConfig{})

	r1, err := s.hooks.RotateSecret(ctx, s.project, c.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Secret == c.Secret || !strings.HasPrefix(r1.Secret, "whsec_") || r1.ID != c.ID ||
		r1.PreviousSecretUntil == nil || r1.PreviousSecretUntil.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("rotation: %+v, want a new secret and the old one kept for an hour", r1)
	}
	s.appendEvents(t, 1, events.ItemCreated)
	runUntil(t, d, func() bool { return len(rc.got()) == 1 })
	h := rc.got()[0]
	if !verify(t, r1.Secret, h.id, h.timestamp, h.body, h.signature) || !verify(t, c.Secret, h.id, h.timestamp, h.body, h.signature) {
		t.Fatalf("during the grace, signature %q: want it to verify with the new and the old secret", h.signature)
	}

	r2, err := s.hooks.RotateSecret(ctx, s.project, c.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.appendEvents(t, 1, events.ItemCreated)
	runUntil(t, d, func() bool { return len(rc.got()) == 2 })
	h = rc.got()[1]
	if !verify(t, r2.Secret, h.id, h.timestamp, h.body, h.signature) {
		t.Fatalf("signature %q does not verify with the newest secret", h.signature)
	}
	for _, old := range []string{c.Secret, r1.Secret} {
		if verify(t, old, h.id, h.timestamp, h.body, h.signature) {
			t.Fatalf("signature %q still verifies with a secret rotated out without grace", h.signature)
		}
	}
	if ds := s.deliveries(t, c.ID); len(ds) != 2 {
		t.Fatalf("%d delivery records after two rotations, want both kept", len(ds))
	}

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, g := range []time.Duration{-time.Second, webhook.MaxSecretGrace + time.Second} {
			if _, err := s.hooks.RotateSecret(ctx, s.project, c.ID, g); wgerr.CodeOf(err) != wgerr.CodeInvalid {
				t.Errorf("grace %s: %v, want invalid_argument", g, err)
			}
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := s.hooks.RotateSecret(ctx, s.project, uuid.New(), time.Hour); wgerr.CodeOf(err) != wgerr.CodeNotFound {
			t.Errorf("rotating an unknown webhook: %v, want not_found", err)
		}
	})
}

// TestDeliverSlackLongQuestionFitsItsBlock: Slack refuses a message whose
// section text is longer than 3,000 characters (400 invalid_blocks, and
// the delivery fails for good), so the question's block is cut to fit
// after it is escaped and quoted, never inside an escape: a long question
// full of code (each "<" and "&" grows fourfold, each line two "> ") still
// reaches the channel.
func TestDeliverSlackLongQuestionFitsItsBlock(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL, Format: webhook.FormatSlack, EventTypes: []string{events.AttentionOpened}})
	line := "if a < b && c > d { return x<<2 } // see <https://example.com|this>\n"
	mustRequest(t, s.pool, s.project, strings.Repeat(line, 4000/len(line)))
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "https://wg.example.com/",
		Attention: attention.NewService(s.pool, nil, attention.Config{})})
	runUntil(t, d, func() bool { return len(rc.got()) >= 1 })
	var m struct {
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	body := rc.got()[0].body
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Blocks) < 2 || m.Blocks[1].Text == nil {
		t.Fatalf("blocks %s: want the asker, then the question", body)
	}
	for i, b := range m.Blocks {
		if b.Text != nil && utf8.RuneCountInString(b.Text.Text) > 3000 {
			t.Errorf("block %d's text is %d characters long; Slack takes at most 3000", i, utf8.RuneCountInString(b.Text.Text))
		}
	}
	q := m.Blocks[1].Text.Text
	if !strings.HasPrefix(q, "> if a &lt; b &amp;&amp; c &gt; d") || !strings.HasSuffix(q, "…") {
		t.Errorf("question block %q…%q: want the escaped question, quoted, cut with an ellipsis", clipStart(q, 60), q[max(0, len(q)-60):])
	}
	for _, l := range strings.Split(q, "\n") {
		if !strings.HasPrefix(l, "> ") {
			t.Errorf("question line %q is not quoted", l)
		}
	}
	if cut := strings.TrimSuffix(q, "…"); strings.LastIndex(cut, "&") > strings.LastIndex(cut, ";") {
		t.Errorf("the question is cut inside an escape: %q", q[max(0, len(q)-20):])
	}
}

func clipStart(s string, n int) string { return s[:min(n, len(s))] }

// TestDisabledBacklogStallsNoOtherWebhook: the deliveries a disabled
// webhook left pending (a day of them, when failing disabled it) wait
// for it without standing in the way: every other webhook, of any
// project, is still delivered. The round's search for due work read the
// oldest due rows whatever their webhook, so a disabled webhook's backlog
// of more than that search's rows hid every other project's deliveries
// for good.
func TestDisabledBacklogStallsNoOtherWebhook(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	down := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusServiceUnavailable) })
	failing := s.webhook(t, webhook.New{URL: down.URL})
	// Concurrency 1: a round's search reads 4 due rows.
	d := s.deliverer(webhook.DelivererConfig{Concurrency: 1})
	const backlog = 10
	s.appendEvents(t, backlog, events.ItemCreated)
	runUntil(t, d, func() bool { return len(down.ids()) == backlog })
	off := false
	if _, err := s.hooks.Update(ctx, s.project, failing.ID, webhook.Change{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.deliveries(t, failing.ID)); n != backlog {
		t.Fatalf("the disabled webhook has %d deliveries, want its %d pending", n, backlog)
	}

	other := deliverySetup{pool: s.pool, project: mustProject(t, s.pool), hooks: s.hooks}
	up := newReceiver(t, nil)
	other.webhook(t, webhook.New{URL: up.URL})
	other.appendEvents(t, 1, events.ItemCreated)
	for range 20 {
		if r := d.RunOnce(ctx); r.Err != nil && !errors.Is(r.Err, webhook.ErrHorizonDelayed) {
			t.Fatal(r.Err)
		}
		if len(up.got()) > 0 {
			break
		}
	}
	if len(up.got()) != 1 {
		t.Fatalf("another project's webhook got %d requests in 20 rounds, want its event: the disabled webhook's backlog stalls it", len(up.got()))
	}
	for _, dl := range s.deliveries(t, failing.ID) {
		if dl.State != webhook.StatePending || dl.NextAttemptAt != nil {
			t.Fatalf("a delivery of the disabled webhook is %s, next attempt %v; want it pending, with no next attempt until the webhook is enabled", dl.State, dl.NextAttemptAt)
		}
	}
	// Enabled again, its receiver back: what waited is delivered.
	down.setAnswer(nil)
	on := true
	if _, err := s.hooks.Update(ctx, s.project, failing.ID, webhook.Change{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	runUntil(t, d, func() bool { return s.settled(t, failing.ID) })
	for _, dl := range s.deliveries(t, failing.ID) {
		if dl.State != webhook.StateDelivered {
			t.Fatalf("after enabling, a delivery is %+v, want delivered", dl)
		}
	}
}

// TestDisabledByFailuresParksItsBacklog: the failure that disables a
// webhook parks its pending deliveries with it (no next attempt), so they
// wait for it out of the way of the others.
func TestDisabledByFailuresParksItsBacklog(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, func(w http.ResponseWriter, n int) { w.WriteHeader(http.StatusServiceUnavailable) })
	c := s.webhook(t, webhook.New{URL: rc.URL})
	clk := clock.NewStub(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	d := s.deliverer(webhook.DelivererConfig{Clock: clk, DisableAfter: time.Hour,
		Backoff: func(int) time.Duration { return time.Hour }})
	s.appendEvents(t, 3, events.ItemCreated)
	runUntil(t, d, func() bool { return len(rc.got()) == 3 })
	clk.Advance(time.Hour + time.Second)
	runUntil(t, d, func() bool { return len(rc.got()) >= 4 })
	w, err := s.hooks.Get(ctx, s.project, c.ID)
	if err != nil || w.Enabled || w.DisabledReason == nil {
		t.Fatalf("after an hour of failures with DisableAfter an hour: %+v, %v; want disabled", w, err)
	}
	for _, dl := range s.deliveries(t, c.ID) {
		if dl.State != webhook.StatePending || dl.NextAttemptAt != nil {
			t.Fatalf("a delivery of the webhook failures disabled: %s, next attempt %v; want pending and parked", dl.State, dl.NextAttemptAt)
		}
	}
}

// TestDeliverSlackLongTitleFitsItsBlock: the block that names who asked
// about which item stays within Slack's 3,000 characters however long the
// title and the asker's name are once escaped (a title of 500 characters
// can grow fivefold), or Slack refuses the message.
func TestDeliverSlackLongTitleFitsItsBlock(t *testing.T) {
	t.Parallel()
	s := setupDelivery(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL, Format: webhook.FormatSlack, EventTypes: []string{events.AttentionOpened}})
	it, err := graph.NewService(s.pool, nil).CreateItem(ctx, s.project,
		graph.NewItem{Title: strings.Repeat("<&>", graph.MaxTitleChars/3), CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attention.NewService(s.pool, nil, attention.Config{}).Hold(ctx, s.project, it.ID, "Ship?",
		"token:"+strings.Repeat("&", 190)); err != nil {
		t.Fatal(err)
	}
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "https://wg.example.com/",
		Attention: attention.NewService(s.pool, nil, attention.Config{})})
	runUntil(t, d, func() bool { return len(rc.got()) >= 1 })
	var m struct {
		Blocks []struct {
			Text *struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	body := rc.got()[0].body
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Blocks) == 0 || m.Blocks[0].Text == nil || !strings.Contains(m.Blocks[0].Text.Text, "&lt;&amp;&gt;") {
		t.Fatalf("blocks %s: want the asker and the item first", body)
	}
	for i, b := range m.Blocks {
		if b.Text != nil && utf8.RuneCountInString(b.Text.Text) > 3000 {
			t.Errorf("block %d's text is %d characters long; Slack takes at most 3000", i, utf8.RuneCountInString(b.Text.Text))
		}
	}
}

// TestDeliverPrunedEventIsNotTheReceiversFailure: a delivery whose event
// the events' retention deleted before it was sent ends failed, saying
// so, without contacting the receiver and without counting against the
// webhook (its run of failures toward disabling does not start).
func TestDeliverPrunedEventIsNotTheReceiversFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupDelivery(t)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {})
	c := s.webhook(t, webhook.New{URL: rc.URL})
	// An old event, and its delivery made before the retention ran (as
	// fan-out would have made it).
	var seq int64
	if err := s.pool.QueryRow(ctx, `INSERT INTO events (project_id, type, at, actor) VALUES ($1, 'item.created', now() - interval '40 days', 'system') RETURNING seq`,
		s.project).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, next_attempt_at, created_at)
		VALUES ($1, $2, $3, 'item.created', now(), now())`, s.project, c.ID, seq); err != nil {
		t.Fatal(err)
	}
	if n := events.NewRetention(s.pool, nil, 30*24*time.Hour, 0, nil).RunOnce(ctx); n != 1 {
		t.Fatalf("the retention deleted %d events, want 1", n)
	}
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return s.settled(t, c.ID) })
	ds := s.deliveries(t, c.ID)
	if len(ds) != 1 || ds[0].State != webhook.StateFailed || ds[0].LastError == nil || !strings.Contains(*ds[0].LastError, "retention") {
		t.Fatalf("deliveries %+v, want the one failed, naming the retention", ds)
	}
	if len(rc.got()) != 0 {
		t.Fatal("the receiver was sent a delivery of a deleted event")
	}
	if w, _ := s.hooks.Get(ctx, s.project, c.ID); w.FailingSince != nil || !w.Enabled {
		t.Fatalf("a deleted event counted against the webhook: %+v", w)
	}
}

// TestDeliverMessageErrorIsNotTheReceiversFailure: a message that cannot
// be built (the database failing under it) is retried later without
// contacting the receiver and without counting against the webhook.
func TestDeliverMessageErrorIsNotTheReceiversFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupDelivery(t)
	rc := newReceiver(t, func(w http.ResponseWriter, n int) {})
	c := s.webhook(t, webhook.New{URL: rc.URL})
	request := uuid.New()
	if _, err := events.Append(ctx, s.pool, events.New{Project: s.project, Type: events.AttentionOpened, Actor: "system",
		AttentionID: &request}); err != nil {
		t.Fatal(err)
	}
	// The request is read on a pool that is gone: every read fails.
	gone, err := pgxpool.New(ctx, s.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	d := s.deliverer(webhook.DelivererConfig{Attention: attention.NewService(gone, nil, attention.Config{})})
	runUntil(t, d, func() bool {
		ds := s.deliveries(t, c.ID)
		return len(ds) == 1 && ds[0].Attempts > 0
	})
	ds := s.deliveries(t, c.ID)
	if ds[0].State != webhook.StatePending || ds[0].LastError == nil || !strings.Contains(*ds[0].LastError, "building the message") {
		t.Fatalf("delivery %+v, want pending, naming the message's failure", ds[0])
	}
	if len(rc.got()) != 0 {
		t.Fatal("the receiver was sent something")
	}
	if w, _ := s.hooks.Get(ctx, s.project, c.ID); w.FailingSince != nil || !w.Enabled {
		t.Fatalf("a failure of ours counted against the webhook: %+v", w)
	}
}
