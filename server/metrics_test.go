package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// call sends an admin request with a JSON body and decodes the answer
// into out (when not nil), failing unless the status is want.
func call(t testing.TB, srv *server.Server, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// scrape reads url's metrics as series ("name{labels}") to value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// expect checks the series of got against want.
func expect(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		g, ok := got[series]
		if !ok {
			t.Errorf("no series %s", series)
		} else if g != v {
			t.Errorf("%s = %v, want %v", series, g, v)
		}
	}
}

type claimAnswer struct {
	Lease struct {
		ID    string `json:"id"`
		Epoch int64  `json:"epoch"`
	} `json:"lease"`
	Item struct {
		ID string `json:"id"`
	} `json:"item"`
}

// TestMetricsLifecycle scripts a lifecycle (claims granted and empty, a
// completion, a stale and a late heartbeat, an expiry the sweeper reaps, a
// question a person answers two minutes later; then events and webhooks:
// eventsAndWebhooksLifecycle) and finds each counter and gauge of /metrics
// at the value it must have.
func TestMetricsLifecycle(t *testing.T) {
	t.Parallel()
	stub := clock.NewStub(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	srv := start(t, func(c *server.Config) {
		c.Clock = stub
		c.MetricsAddr = "127.0.0.1:0"
		c.CensusInterval = -1 // a census per scrape: the test reads its changes at once
		c.SweepInterval = 20 * time.Millisecond
	})
	if srv.MetricsURL() == "" || strings.HasPrefix(srv.MetricsURL(), srv.URL()) {
		t.Fatalf("metrics URL %q: not a listener of its own", srv.MetricsURL())
	}
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "m"}, 201, nil)
	for _, title := range []string{"one", "two"} {
		call(t, srv, "POST", "/v1/projects/m/items", map[string]any{"title": title}, 201, nil)
	}
	claim := func(want int) claimAnswer {
		var c claimAnswer
		var out any = &c
		if want != 201 {
			out = nil
		}
		call(t, srv, "POST", "/v1/projects/m/claims", map[string]any{"worker": "w", "lease_seconds": 30}, want, out)
		return c
	}
	lease := func(c claimAnswer, op string, body map[string]any, want int) {
		body["epoch"] = c.Lease.Epoch
		call(t, srv, "POST", "/v1/leases/"+c.Lease.ID+"/"+op, body, want, nil)
	}

	first := claim(201)
	lease(first, "complete", map[string]any{"result": "ok"}, 200)
	lease(first, "heartbeat", map[string]any{}, 409) // stale: the lease ended completed
	second := claim(201)
	claim(204) // nothing left ready

	// names of every series seen, for the dashboard's check below
	seen := map[string]bool{}
	see := func(m map[string]float64) map[string]float64 {
		for series := range m {
			name, _, _ := strings.Cut(series, "{")
			seen[name] = true
		}
		return m
	}
	m := see(scrape(t, srv.MetricsURL()))
	expect(t, m, map[string]float64{
		`workgraph_items{project="m",state="done"}`:   1,
		`workgraph_items{project="m",state="leased"}`: 1,
		`workgraph_live_leases{project="m"}`:          1,
	})

	stub.Advance(time.Minute) // the second lease expires; the sweeper reaps it
	deadline := time.Now().Add(10 * time.Second)
	for scrape(t, srv.MetricsURL())["workgraph_sweeper_leases_reaped_total"] < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper never reaped the expired lease")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lease(second, "heartbeat", map[string]any{}, 409) // late: the lease expired

	third := claim(201) // the expired item, back in circulation
	if third.Item.ID != second.Item.ID {
		t.Fatalf("claimed %s, want the expired item %s", third.Item.ID, second.Item.ID)
	}
	var asked struct {
		Attention struct {
			ID string `json:"id"`
		} `json:"attention"`
	}
	call(t, srv, "POST", "/v1/leases/"+third.Lease.ID+"/attention", map[string]any{"epoch": third.Lease.Epoch, "question": "which?"}, 201, &asked)
	m = see(scrape(t, srv.MetricsURL()))
	expect(t, m, map[string]float64{`workgraph_attention_open{project="m"}`: 1})
	stub.Advance(2 * time.Minute)
	call(t, srv, "POST", "/v1/attention/"+asked.Attention.ID+"/resolve", map[string]any{"answer": "this"}, 200, nil)

	m = see(scrape(t, srv.MetricsURL()))
	expect(t, m, map[string]float64{
		`workgraph_claims_total{result="granted"}`:                                                          3,
		`workgraph_claims_total{result="empty"}`:                                                            1,
		`workgraph_claim_wait_seconds_count{result="granted"}`:                                              3,
		`workgraph_lease_outcomes_total{outcome="completed"}`:                                               1,
		`workgraph_lease_outcomes_total{outcome="expired"}`:                                                 1,
		`workgraph_lease_outcomes_total{outcome="attention_requested"}`:                                     1,
		`workgraph_lease_calls_refused_total{operation="heartbeat",reason="stale"}`:                         1,
		`workgraph_lease_calls_refused_total{operation="heartbeat",reason="late"}`:                          1,
		`workgraph_sweeper_leases_reaped_total`:                                                             1,
		`workgraph_attention_time_to_answer_seconds_count`:                                                  1,
		`workgraph_attention_time_to_answer_seconds_sum`:                                                    120,
		`workgraph_http_requests_total{method="POST",route="/v1/leases/:id/complete",status="200"}`:         1,
		`workgraph_http_requests_total{method="POST",route="/v1/leases/:id/heartbeat",status="409"}`:        2,
		`workgraph_http_requests_total{method="POST",route="/v1/projects/:project/claims",status="204"}`:    1,
		`workgraph_http_request_duration_seconds_count{method="POST",route="/v1/projects/:project/claims"}`: 4,
		`workgraph_items{project="m",state="done"}`:                                                         1,
		`workgraph_items{project="m",state="ready"}`:                                                        1,
		`workgraph_db_pool_max_connections{pool="main"}`:                                                    float64(servertest.TestMaxConns),
	})
	// None left: the series read 0 (they do not vanish).
	for _, series := range []string{`workgraph_live_leases{project="m"}`, `workgraph_attention_open{project="m"}`} {
		if v, ok := m[series]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v) after the answer, want 0 (none left)", series, v, ok)
		}
	}
	if m[`workgraph_sweeper_runs_total{result="ok"}`] < 1 || m[`workgraph_db_pool_acquires_total{pool="main"}`] < 1 {
		t.Errorf("sweeper runs %v, pool acquires %v", m[`workgraph_sweeper_runs_total{result="ok"}`], m[`workgraph_db_pool_acquires_total{pool="main"}`])
	}
	var build bool
	for series, v := range m {
		build = build || strings.HasPrefix(series, "workgraph_build_info{") && v == 1
	}
	if !build {
		t.Error("no workgraph_build_info")
	}

	eventsAndWebhooksLifecycle(t, see)

	// Every metric the Grafana dashboard queries exists.
	dash, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`workgraph_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) < 10 {
		t.Fatalf("the dashboard queries only %d metrics", len(names))
	}
	for _, name := range names {
		if !seen[name] {
			t.Errorf("the dashboard queries %s, which /metrics does not have", name)
		}
	}
}

// TestMetricsWait: the long poll's counts (claim transactions of waiting
// claims against their grants) reach /metrics.
func TestMetricsWait(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsAddr = "127.0.0.1:0" })
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "m"}, 201, nil)
	call(t, srv, "POST", "/v1/projects/m/items", map[string]any{"title": "one"}, 201, nil)
	claim := map[string]any{"worker": "w", "lease_seconds": 30, "wait_seconds": 1}
	call(t, srv, "POST", "/v1/projects/m/claims", claim, 201, nil)
	call(t, srv, "POST", "/v1/projects/m/claims", claim, 204, nil) // nothing else becomes ready
	expect(t, scrape(t, srv.MetricsURL()), map[string]float64{
		`workgraph_wait_claims_begun_total`:       2,
		`workgraph_wait_claim_transactions_total`: 2,
		`workgraph_wait_grants_total`:             1,
		`workgraph_wait_broadcasts_total`:         0,
	})
}

// TestMetricsIdempotencyPool: the small pool that records Idempotency-Keys
// on a direct database (every write of the Go client, the CLI and `work`
// goes through it) reports its statistics beside the main pool's, so a
// replica whose keyed requests queue for it shows why.
func TestMetricsIdempotencyPool(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsAddr = "127.0.0.1:0" })
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "keys"}, 201, nil)
	req, _ := http.NewRequest("POST", srv.URL()+"/v1/projects/keys/items", strings.NewReader(`{"title": "keyed"}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "pool-metrics-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("keyed POST: %d", resp.StatusCode)
	}
	m := scrape(t, srv.MetricsURL())
	expect(t, m, map[string]float64{`workgraph_db_pool_max_connections{pool="idempotency"}`: 8})
	if m[`workgraph_db_pool_acquires_total{pool="idempotency"}`] < 1 {
		t.Errorf("the idempotency pool's acquires: %v, want at least the keyed request's", m[`workgraph_db_pool_acquires_total{pool="idempotency"}`])
	}
}
