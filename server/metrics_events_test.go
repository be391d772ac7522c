package server_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/server"
)

// eventually scrapes until ok holds of the metrics (a background service
// counts after the answer that caused it); the bound is a safety net for a
// broken service, not a measure of speed.
func eventually(t *testing.T, srv *server.Server, what string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := scrape(t, srv.MetricsURL())
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never so; metrics %v", what, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventsAndWebhooksLifecycle scripts events read by a long poll and a
// stream, and two webhooks, one whose receiver fails once then accepts,
// one whose receiver always fails until the webhook is disabled a day
// later, and finds the events and delivery counters at their values (part
// of TestMetricsLifecycle: see records the series it scrapes).
//
// Its stub clock is years behind the database's, which judges the
// census's backlog: a delivery the deliverer will retry at stub time
// +5 s is already due to the census, and the backlog shows.
func eventsAndWebhooksLifecycle(t *testing.T, see func(map[string]float64) map[string]float64) {
	stub := clock.NewStub(time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC))
	srv := start(t, func(c *server.Config) {
		c.Clock = stub
		c.MetricsAddr = "127.0.0.1:0"
		c.CensusInterval = -1
		c.Webhooks.AllowPrivate = true
	})
	var flaky, down atomic.Int32
	flakyRc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if flaky.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(flakyRc.Close)
	downRc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		down.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(downRc.Close)

	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "m"}, 201, nil)
	hook := func(url string) {
		call(t, srv, "POST", "/v1/projects/m/webhooks", map[string]any{"url": url, "event_types": []string{"item.created"}}, 201, nil)
	}

	// A stream, open before the items exist: it waits on the follower.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL()+"/v1/projects/m/events/stream?types=item.created", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	eventually(t, srv, "one live stream", func(m map[string]float64) bool { return m["workgraph_event_streams"] == 1 })

	// The flaky webhook is told of both items, the failing one (created
	// after the first) of the second only.
	hook(flakyRc.URL)
	call(t, srv, "POST", "/v1/projects/m/items", map[string]any{"title": "one"}, 201, nil)
	hook(downRc.URL)
	call(t, srv, "POST", "/v1/projects/m/items", map[string]any{"title": "two"}, 201, nil)
	// The stream hands both to its reader.
	lines := bufio.NewScanner(resp.Body)
	var last int64
	// An event is its id line and then its event line (a keep-alive's
	// id has none).
	for got, id := 0, int64(0); got < 2 && lines.Scan(); {
		if v, ok := strings.CutPrefix(lines.Text(), "id: "); ok {
			id, _ = strconv.ParseInt(v, 10, 64)
		}
		if strings.HasPrefix(lines.Text(), "event: ") {
			last = id
			got++
		}
	}
	if last == 0 {
		t.Fatalf("the stream ended before two events: %v", lines.Err())
	}
	// A poll of the log reads the two.
	var page struct {
		Events []struct {
			Seq int64 `json:"seq"`
		} `json:"events"`
	}
	call(t, srv, "GET", "/v1/projects/m/events?types=item.created", nil, 200, &page)
	if len(page.Events) != 2 {
		t.Fatalf("the poll read %d events, want 2", len(page.Events))
	}

	// Each receiver failed once (the flaky one accepted its other
	// delivery): two retries, one delivered.
	m := see(eventually(t, srv, "the first attempts", func(m map[string]float64) bool {
		return m[`workgraph_webhook_deliveries_total{result="retry"}`] == 2 && m[`workgraph_webhook_deliveries_total{result="delivered"}`] == 1
	}))
	expect(t, m, map[string]float64{
		`workgraph_events_sent_total{route="stream"}`:   2,
		`workgraph_events_sent_total{route="poll"}`:     2,
		`workgraph_event_streams`:                       1,
		`workgraph_webhook_deliveries_due{project="m"}`: 2, // the two retries
	})
	if m["workgraph_events_last_number"] < float64(last) || m["workgraph_events_horizon_wait_seconds_count"] < 1 {
		t.Errorf("last number %v (want at least %d), horizon waits %v", m["workgraph_events_last_number"], last, m["workgraph_events_horizon_wait_seconds_count"])
	}

	// A day passes: the flaky receiver accepts the retries, the other
	// fails them for good and its webhook is disabled.
	stub.Advance(25 * time.Hour)
	// Settled includes the disabling: a scrape gathers the collectors
	// concurrently, so one scrape may see the failure counted and not yet
	// the disabling that the same attempt counted just before it (seen
	// once in a fresh-clone CI run under load).
	m = see(eventually(t, srv, "the deliveries settled", func(m map[string]float64) bool {
		return m[`workgraph_webhook_deliveries_total{result="delivered"}`] == 2 && m[`workgraph_webhook_deliveries_total{result="failed"}`] == 1 &&
			m[`workgraph_webhooks_disabled_total`] == 1
	}))
	expect(t, m, map[string]float64{
		`workgraph_webhook_deliveries_total{result="retry"}`:    2,
		`workgraph_webhook_deliveries_total{result="refused"}`:  0,
		`workgraph_webhook_deliveries_total{result="lost"}`:     0,
		`workgraph_webhook_deliveries_total{result="released"}`: 0,
		`workgraph_webhook_delivery_duration_seconds_count`:     5,
		`workgraph_webhooks_disabled_total`:                     1,
		`workgraph_webhooks_paused_total`:                       0, // two failures in a row at most
	})
	if v, ok := m[`workgraph_webhook_deliveries_due{project="m"}`]; !ok || v != 0 {
		t.Errorf("the delivery backlog after every delivery settled: %v (present %v), want 0", v, ok)
	}

	cancel()
	eventually(t, srv, "no live stream", func(m map[string]float64) bool { return m["workgraph_event_streams"] == 0 })
}
