package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/server"
)

// TestHealthzVersion: /healthz names the build that answers.
func TestHealthzVersion(t *testing.T) {
	t.Parallel()
	srv := start(t)
	resp, err := http.Get(srv.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	bi := buildinfo.Get()
	for k, want := range map[string]any{"status": "ok", "version": bi.Version, "commit": bi.Commit, "build_date": bi.BuildDate, "modified": bi.Modified} {
		if raw[k] != want {
			t.Errorf("/healthz %s = %v, want %v (body %v)", k, raw[k], want, raw)
		}
	}
}

// TestFirstStartBlock: the first-start token is printed as a block of its
// own on FirstStartOut, and no log line carries it.
func TestFirstStartBlock(t *testing.T) {
	t.Parallel()
	var log, out syncBuffer
	srv := start(t, func(c *server.Config) {
		c.BootstrapToken = ""
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c.FirstStartOut = &out
	})
	block := out.String()
	var token string
	for _, f := range strings.Fields(block) {
		if strings.HasPrefix(f, "wg_") {
			token = f
		}
	}
	if token == "" || !strings.Contains(block, srv.URL()+"/") || !strings.Contains(block, "\n    "+token+"\n") {
		t.Fatalf("no token alone on its line, or no UI address, in the block:\n%s", block)
	}
	if strings.Contains(log.String(), token) {
		t.Fatalf("the token is in the log:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "first start") {
		t.Fatalf("the log does not say a token was made:\n%s", log.String())
	}
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/projects/default", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the printed token: %d", resp.StatusCode)
	}
}

// TestFirstStartBlockExports: the first-start block gives the CLI's
// settings as one line to paste, the server's real address and the token
// (a server on another address than the CLI's default, 127.0.0.1:8080,
// was not found with WORKGRAPH_TOKEN alone).
func TestFirstStartBlockExports(t *testing.T) {
	t.Parallel()
	var log, out syncBuffer
	srv := start(t, func(c *server.Config) {
		c.BootstrapToken = ""
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c.FirstStartOut = &out
	})
	var export string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "export ") {
			export = strings.TrimSpace(line)
		}
	}
	f := strings.Fields(export)
	if len(f) != 3 || f[1] != "WORKGRAPH_URL="+srv.URL() || !strings.HasPrefix(f[2], "WORKGRAPH_TOKEN=wg_") {
		t.Fatalf("no line `export WORKGRAPH_URL=%s WORKGRAPH_TOKEN=<token>` in the block:\n%s", srv.URL(), out.String())
	}
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/projects/default", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimPrefix(f[2], "WORKGRAPH_TOKEN="))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the exported token: %d", resp.StatusCode)
	}
}

// TestPprof: pprof is served only when asked for, on a loopback address
// of its own; any other address is refused before the server starts.
func TestPprof(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		srv := start(t, func(c *server.Config) { c.PprofAddr = "127.0.0.1:0" })
		if !strings.HasPrefix(srv.PprofURL(), "http://127.0.0.1:") || strings.HasPrefix(srv.PprofURL(), srv.URL()) {
			t.Fatalf("pprof URL %q", srv.PprofURL())
		}
		for url, want := range map[string]int{srv.PprofURL() + "goroutine?debug=1": 200, srv.URL() + "/debug/pprof/": 404} {
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
			}
		}
	})
	t.Run("ErrNotLoopback", func(t *testing.T) {
		t.Parallel()
		_, err := server.Start(context.Background(), server.Config{Addr: "127.0.0.1:0", PprofAddr: "0.0.0.0:0", DatabaseURL: "postgres://unused.invalid/x"})
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Off", func(t *testing.T) {
		t.Parallel()
		if srv := start(t); srv.PprofURL() != "" || srv.MetricsURL() != "" {
			t.Fatalf("pprof %q, metrics %q without asking", srv.PprofURL(), srv.MetricsURL())
		}
	})
}

// TestMetricsOnMain: with MetricsOnMain the main address answers
// /metrics too.
func TestMetricsOnMain(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsOnMain = true })
	if srv.MetricsURL() != srv.URL()+"/metrics" {
		t.Fatalf("metrics URL %q", srv.MetricsURL())
	}
	m := scrape(t, srv.MetricsURL())
	if _, ok := m[`workgraph_claims_total{result="granted"}`]; !ok {
		t.Fatalf("no claims counter in %d series", len(m))
	}
}

// TestWebErrorRequestID: a page that fails (500) is named by a request id
// in its X-Request-Id header, and its "request failed" log line carries
// the same id.
func TestWebErrorRequestID(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	srv := start(t, func(c *server.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&log, nil))
		// A fresh database: the test renames a column, a change of the
		// schema that a reused database would hand to the next test.
		c.DatabaseURL = dbtest.FreshURL(t)
	})
	browser := newBrowser(t, srv)
	if st := browser.signIn(adminToken); st != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", st)
	}
	if _, err := srv.Pool().Exec(context.Background(), "ALTER TABLE projects RENAME COLUMN name TO name_was"); err != nil {
		t.Fatal(err)
	}
	res, err := browser.Get(srv.URL() + "/projects")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Request-Id")
	if res.StatusCode != 500 || id == "" {
		t.Fatalf("status %d, request id %q", res.StatusCode, id)
	}
	var found bool
	for _, l := range strings.Split(log.String(), "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) != nil || line["msg"] != "web: request failed" {
			continue
		}
		found = true
		if line["request_id"] != id {
			t.Errorf("the log line of the failed page has request_id %v, the answer %q: %s", line["request_id"], id, l)
		}
	}
	if !found {
		t.Fatalf("no \"web: request failed\" line:\n%s", log.String())
	}
}

// TestDeliveryRetentionBelowADayRefused: the server refuses a retention
// of delivery records the table would refuse, before it opens the
// database.
func TestDeliveryRetentionBelowADayRefused(t *testing.T) {
	t.Parallel()
	_, err := server.Start(context.Background(), server.Config{Addr: "127.0.0.1:0", DatabaseURL: "postgres://unused.invalid/x",
		Webhooks: server.WebhooksConfig{DeliveryRetention: time.Hour}})
	if err == nil || !strings.Contains(err.Error(), "webhooks-delivery-retention") {
		t.Fatalf("err = %v", err)
	}
}

// TestEventsRetentionBelowADayRefused: the server refuses a retention the
// events table would refuse, before it opens the database.
func TestEventsRetentionBelowADayRefused(t *testing.T) {
	t.Parallel()
	_, err := server.Start(context.Background(), server.Config{Addr: "127.0.0.1:0", EventsRetention: time.Hour, DatabaseURL: "postgres://unused.invalid/x"})
	if err == nil || !strings.Contains(err.Error(), "events-retention") {
		t.Fatalf("err = %v", err)
	}
}

// TestMetricsUnknownMethods: requests with made-up methods (anyone may
// send them, signed in or not) are counted under one method label,
// _OTHER, so they cannot add series to /metrics without bound.
func TestMetricsUnknownMethods(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsOnMain = true })
	for i := range 5 {
		for _, path := range []string{"/v1/projects/default/items", "/no/such/page"} {
			req, _ := http.NewRequest(fmt.Sprintf("M%d", i), srv.URL()+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	others := 0.0
	for series, v := range scrape(t, srv.MetricsURL()) {
		if !strings.HasPrefix(series, "workgraph_http_requests_total{") {
			continue
		}
		if strings.Contains(series, `method="M`) {
			t.Errorf("a series per made-up method: %s", series)
		}
		if strings.Contains(series, `method="_OTHER"`) {
			others += v
		}
	}
	if others != 10 {
		t.Errorf("requests counted with method _OTHER: %v, want 10", others)
	}
}

// TestShutdownEndsWaitingClaims: shutting down answers the claims waiting
// for work at once, 204 as when their wait is over (their workers claim
// again, from a replica still serving), instead of holding the exit for
// the whole grace period and then failing them 503.
func TestShutdownEndsWaitingClaims(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsOnMain = true })
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "quiet"}, 201, nil)
	answers := make(chan int, 2)
	for _, body := range []string{`{"worker": "w1", "wait_seconds": 60}`, `{"worker": "w2", "wait_seconds": 60, "max_items": 5}`} {
		go func() {
			req, _ := http.NewRequest("POST", srv.URL()+"/v1/projects/quiet/claims", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- 0
				return
			}
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); scrape(t, srv.MetricsURL())["workgraph_wait_claims_begun_total"] < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the two claims did not begin waiting within 30 s: %v", scrape(t, srv.MetricsURL())["workgraph_wait_claims_begun_total"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	grace, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	begun := time.Now()
	if err := srv.Shutdown(grace); err != nil {
		t.Errorf("Shutdown with claims waiting: %v after %v", err, time.Since(begun))
	}
	for range 2 {
		if code := <-answers; code != http.StatusNoContent {
			t.Errorf("a waiting claim at shutdown: %d, want 204", code)
		}
	}
}

// TestInconsistentSettingsRefused: settings that would make every claim
// (lease bounds that leave no lease length, or a default outside them) or
// every notification link (a public URL that is not one) fail are refused
// at start, naming the flags, before the database is opened.
func TestInconsistentSettingsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  server.Config
		want []string
	}{
		{"LeaseMinAboveMax", server.Config{Lease: lease.Config{MinTTL: 10 * time.Minute, MaxTTL: time.Minute}}, []string{"lease-min", "lease-max"}},
		{"LeaseDefaultAboveMax", server.Config{Lease: lease.Config{MaxTTL: time.Minute}}, []string{"lease-default", "15m", "lease-max"}},
		{"LeaseDefaultBelowMin", server.Config{Lease: lease.Config{MinTTL: time.Hour}}, []string{"lease-default", "lease-min"}},
		{"PublicURLNotAbsolute", server.Config{PublicURL: "workgraph.example.com"}, []string{"public-url"}},
		{"PublicURLNotHTTP", server.Config{PublicURL: "ftp://workgraph.example.com"}, []string{"public-url"}},
		{"NegativeWebhooksTimeout", server.Config{Webhooks: server.WebhooksConfig{Timeout: -time.Second}}, []string{"webhooks-timeout"}},
		{"NegativeWebhooksConcurrency", server.Config{Webhooks: server.WebhooksConfig{Concurrency: -1}}, []string{"webhooks-concurrency"}},
		{"NegativeWebhooksPerWebhook", server.Config{Webhooks: server.WebhooksConfig{PerWebhook: -1}}, []string{"webhooks-concurrency-per-webhook"}},
		{"NegativeEventsHeartbeat", server.Config{EventsHeartbeat: -time.Second}, []string{"events-heartbeat"}},
		{"EventsHeartbeatBeyondClientIdle", server.Config{EventsHeartbeat: time.Minute}, []string{"events-heartbeat", "1m0s", "30s"}},
		{"NegativeEventsStall", server.Config{EventsStall: -time.Second}, []string{"events-stall"}},
		{"NegativeFollowInterval", server.Config{EventsFollowInterval: -time.Second}, []string{"events-follow-interval"}},
		{"NegativeSweepInterval", server.Config{SweepInterval: -time.Second}, []string{"sweep-interval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.Addr, cfg.DatabaseURL = "127.0.0.1:0", "postgres://unused.invalid/x"
			_, err := server.Start(context.Background(), cfg)
			if err == nil {
				t.Fatal("started")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "unused.invalid") {
				t.Errorf("err = %v: the database was tried first", err)
			}
		})
	}
}

// TestCensusReportsZeros: every project has every census series, at 0
// when there is nothing to count (no item in a state, no live lease, no
// open question, no backlog), so a count that falls to nothing reads 0,
// not "no data", and an alert on it can resolve.
func TestCensusReportsZeros(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsOnMain = true; c.CensusInterval = -1 })
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "calm"}, 201, nil)
	call(t, srv, "POST", "/v1/projects/calm/items", map[string]any{"title": "one"}, 201, nil)
	want := map[string]float64{
		`workgraph_items{project="calm",state="ready"}`:           1,
		`workgraph_live_leases{project="calm"}`:                   0,
		`workgraph_attention_open{project="calm"}`:                0,
		`workgraph_attention_oldest_open_seconds{project="calm"}`: 0,
		`workgraph_webhook_deliveries_due{project="calm"}`:        0,
	}
	for _, state := range []string{"leased", "attention", "blocked", "done", "cancelled"} {
		want[`workgraph_items{project="calm",state="`+state+`"}`] = 0
	}
	expect(t, scrape(t, srv.MetricsURL()), want)
}

// TestDemoTokenBlock: with Demo, the demo project's token is printed as a
// block of its own on FirstStartOut with the inbox at the real address,
// and no log line carries it (it used to be a log attribute, with the
// configured address, which for ":8080" or port 0 is no link).
func TestDemoTokenBlock(t *testing.T) {
	t.Parallel()
	var log, out syncBuffer
	srv := start(t, func(c *server.Config) {
		c.Demo = true
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c.FirstStartOut = &out
	})
	block := out.String()
	var token string
	for _, f := range strings.Fields(block) {
		if strings.HasPrefix(f, "wg_") {
			token = f
		}
	}
	if token == "" || !strings.Contains(block, srv.URL()+"/p/demo/inbox") || !strings.Contains(block, "\n    "+token+"\n") {
		t.Fatalf("no token alone on its line, or no inbox address, in the block:\n%s", block)
	}
	if strings.Contains(log.String(), token) {
		t.Fatalf("the demo token is in the log:\n%s", log.String())
	}
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/projects/demo", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the printed token: %d", resp.StatusCode)
	}
}

// TestCensusOneSnapshot: the census is one instant of the database, so
// that its figures agree while workers claim and release around it: the
// leased items of a project are its live leases. (Its statements each
// took their own snapshot: a lease granted or ended between two was
// counted in one figure and not the other.)
func TestCensusOneSnapshot(t *testing.T) {
	t.Parallel()
	srv := start(t)
	ctx := context.Background()
	p, err := graph.NewService(srv.Pool(), nil).CreateProject(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	g, leases := graph.NewService(srv.Pool(), nil), lease.NewService(srv.Pool(), nil, lease.Config{})
	for i := range 12 {
		if _, err := g.CreateItem(ctx, p.ID, graph.NewItem{Title: fmt.Sprintf("item %d", i), CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c, err := leases.Claim(ctx, p.ID, lease.ClaimRequest{Worker: fmt.Sprintf("w%d", w)})
				if errors.Is(err, lease.ErrNothingReady) {
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if _, err := leases.Release(ctx, p.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "again"); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for n := 0; n < 150; n++ {
		c, err := db.TakeCensus(ctx, srv.Pool())
		if err != nil {
			t.Fatal(err)
		}
		var leased int64
		for _, it := range c.Items {
			if it.Project == "busy" && it.State == "leased" {
				leased = it.Items
			}
		}
		if live := c.LiveLeases["busy"]; leased != live {
			t.Fatalf("census %d: %d leased items, %d live leases: not one instant", n, leased, live)
		}
	}
}
