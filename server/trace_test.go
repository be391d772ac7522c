package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/telemetry/telemetrytest"
)

// tracedServer starts a server whose spans go to a receiver of the
// test's own.
func tracedServer(t *testing.T, tune ...func(*server.Config)) (*server.Server, *telemetry.Provider, *telemetrytest.Receiver) {
	t.Helper()
	r := telemetrytest.NewReceiver(t)
	vars := r.Env()
	tp, err := telemetry.Setup(context.Background(), "workgraph", func(k string) string { return vars[k] })
	if err != nil || !tp.Enabled() {
		t.Fatalf("telemetry.Setup: %v (enabled %v)", err, tp.Enabled())
	}
	srv := start(t, append([]func(*server.Config){func(c *server.Config) { c.Tracing = tp }}, tune...)...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return srv, tp, r
}

// tracedCall sends an admin request carrying traceparent and X-Request-Id
// and decodes the answer into out (when not nil), failing unless the
// status is want.
func tracedCall(t *testing.T, srv *server.Server, path, traceparent, requestID string, body any, want int, out any) {
	t.Helper()
	tracedCallWith(t, srv, path, http.Header{"Traceparent": {traceparent}, "X-Request-Id": {requestID}}, body, want, out)
}

// tracedCallWith is tracedCall with the request's headers given (the
// authorization and content type are added).
func tracedCallWith(t *testing.T, srv *server.Server, path string, h http.Header, body any, want int, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", srv.URL()+path, bytes.NewReader(b))
	req.Header = h.Clone()
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d: %s", path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

// wantAttrs fails unless span carries each attribute of want.
func wantAttrs(t *testing.T, span telemetrytest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if span.Attrs[k] != v {
			t.Errorf("span %q: %s = %q, want %q\n  %v", span.Name, k, span.Attrs[k], v, span)
		}
	}
}

// spanOf waits for the server span name of traceID and at least one
// database transaction below it, and returns them and the trace's spans.
func spanOf(t *testing.T, r *telemetrytest.Receiver, tp *telemetry.Provider, traceID, name string) (telemetrytest.Span, []telemetrytest.Span) {
	t.Helper()
	spans := r.WaitFor(t, traceID, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
		req := telemetrytest.Named(spans, name)
		return len(req) == 1 && len(telemetrytest.Children(spans, req[0])) > 0
	})
	return telemetrytest.Named(spans, name)[0], spans
}

// TestTraceOfClaim: an agent's traceparent reaches the server; the claim's
// request span is its child, named by the route template, with the
// project, item, lease, epoch, request id and status; the claim's
// database span (db.Atomic: one statement) is a child of the request span, tagged with the
// project. A refused heartbeat's span carries the problem code (a
// refusal, not an error), and its transaction the lease and epoch.
func TestTraceOfClaim(t *testing.T) {
	t.Parallel()
	srv, tp, r := tracedServer(t)
	var project struct {
		ID string `json:"id"`
	}
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "traced"}, 201, &project)
	call(t, srv, "POST", "/v1/projects/traced/items", map[string]any{"title": "one"}, 201, nil)

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		agent   = "00f067aa0ba902b7"
	)
	var cl claimAnswer
	tracedCall(t, srv, "/v1/projects/traced/claims", "00-"+traceID+"-"+agent+"-01", "claim-trace-1",
		map[string]any{"worker": "w", "lease_seconds": 30}, 201, &cl)

	req, spans := spanOf(t, r, tp, traceID, "POST /v1/projects/{project}/claims")
	if req.ParentID != agent || req.Kind != "server" || req.Error {
		t.Fatalf("request span: parent %s (want the agent's %s), kind %s, error %v", req.ParentID, agent, req.Kind, req.Error)
	}
	wantAttrs(t, req, map[string]string{
		"http.request.method": "POST", "http.route": "/v1/projects/{project}/claims", "http.response.status_code": "201",
		"workgraph.project.id": project.ID, "workgraph.item.id": cl.Item.ID, "workgraph.lease.id": cl.Lease.ID,
		"workgraph.lease.epoch": strconv.FormatInt(cl.Lease.Epoch, 10), "workgraph.request_id": "claim-trace-1",
	})
	if req.Resource["service.name"] != "workgraph" || req.Resource["service.version"] == "" {
		t.Errorf("resource %v: want service.name workgraph and a version", req.Resource)
	}
	var claimTx bool
	for _, s := range telemetrytest.Children(spans, req) {
		if !strings.HasPrefix(s.Name, "db.") || s.Kind != "client" || s.Attrs["db.system.name"] != "postgresql" {
			t.Errorf("a child of the request span that is not a transaction: %v", s)
		}
		// The claim is one statement on the pool (lease.Service.Claim).
		claimTx = claimTx || (s.Name == "db.Atomic" && s.Attrs["workgraph.project.id"] == project.ID &&
			s.Attrs["workgraph.item.id"] == cl.Item.ID && s.Attrs["workgraph.lease.id"] == cl.Lease.ID && s.Attrs["workgraph.lease.epoch"] == "1")
	}
	if !claimTx {
		t.Errorf("no db.Atomic child tagged with the project, item, lease and epoch among %v", telemetrytest.Children(spans, req))
	}

	// A heartbeat at a wrong epoch is refused (lease_lost) inside its
	// transaction: a refusal, not the server's error.
	const refusedTrace = "0af7651916cd43dd8448eb211c80319c"
	tracedCall(t, srv, "/v1/leases/"+cl.Lease.ID+"/heartbeat", "00-"+refusedTrace+"-b7ad6b7169203331-01", "stale-heartbeat",
		map[string]any{"epoch": cl.Lease.Epoch + 1}, 409, nil)
	hb, spans := spanOf(t, r, tp, refusedTrace, "POST /v1/leases/{id}/heartbeat")
	wantAttrs(t, hb, map[string]string{
		"http.response.status_code": "409", "workgraph.problem.code": "lease_lost", "workgraph.request_id": "stale-heartbeat",
		"workgraph.project.id": project.ID, "workgraph.lease.id": cl.Lease.ID, "workgraph.lease.epoch": strconv.FormatInt(cl.Lease.Epoch+1, 10),
	})
	if hb.Error {
		t.Errorf("a refusal marked as the server's error: %v", hb)
	}
	// The refusal is recorded in a transaction (the refused call's
	// report), which knows the lease and epoch from the handler's tags.
	var tagged bool
	for _, s := range telemetrytest.Children(spans, hb) {
		tagged = tagged || (s.Attrs["workgraph.lease.id"] == cl.Lease.ID && s.Attrs["workgraph.lease.epoch"] == strconv.FormatInt(cl.Lease.Epoch+1, 10))
	}
	if !tagged {
		t.Errorf("no transaction span of the heartbeat carries the lease and epoch: %v", telemetrytest.Children(spans, hb))
	}
}

// TestTraceOfKeyedClaim: a claim sent with an Idempotency-Key, as the Go
// client, the CLI and `workgraph work` send every claim, has its database
// span too. Its statement and the key's record go in one batch (one
// implicit transaction on the pool), and that transaction is a child of
// the request span tagged with the project, item, lease and epoch it
// granted.
func TestTraceOfKeyedClaim(t *testing.T) {
	t.Parallel()
	srv, tp, r := tracedServer(t)
	var project struct {
		ID string `json:"id"`
	}
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "keyed"}, 201, &project)
	call(t, srv, "POST", "/v1/projects/keyed/items", map[string]any{"title": "one"}, 201, nil)

	const traceID = "2f4c7d0e9a1b4c3d8e7f6a5b4c3d2e1f"
	var cl claimAnswer
	tracedCallWith(t, srv, "/v1/projects/keyed/claims", http.Header{
		"Traceparent":     {"00-" + traceID + "-a1b2c3d4e5f60718-01"},
		"Idempotency-Key": {"keyed-claim-1"},
	}, map[string]any{"worker": "w", "lease_seconds": 30}, 201, &cl)

	// The request's span ends after its transactions: once it is
	// flushed, so are they.
	const name = "POST /v1/projects/{project}/claims"
	spans := r.WaitFor(t, traceID, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
		return len(telemetrytest.Named(spans, name)) == 1
	})
	req := telemetrytest.Named(spans, name)[0]
	var claimTx bool
	for _, s := range telemetrytest.Children(spans, req) {
		claimTx = claimTx || (strings.HasPrefix(s.Name, "db.") && s.Kind == "client" && s.Attrs["db.system.name"] == "postgresql" &&
			s.Attrs["workgraph.project.id"] == project.ID && s.Attrs["workgraph.item.id"] == cl.Item.ID &&
			s.Attrs["workgraph.lease.id"] == cl.Lease.ID && s.Attrs["workgraph.lease.epoch"] == "1")
	}
	if !claimTx {
		t.Errorf("no database span tagged with the project, item, lease and epoch below the keyed claim: %v", telemetrytest.Children(spans, req))
	}
}

// BenchmarkTracing is the cost of tracing on a read request that runs one
// read transaction (GET an item): Off (no provider: what a server without
// OTEL_EXPORTER_OTLP_ENDPOINT runs) and On (every span recorded and
// exported to a local receiver).
//
//	go test -run '^$' -bench Tracing -benchtime 3000x -count 3 ./server/
func BenchmarkTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "Off"
		if on {
			name = "On"
		}
		b.Run(name, func(b *testing.B) {
			var tp *telemetry.Provider
			if on {
				r := telemetrytest.NewReceiver(b)
				vars := r.Env()
				var err error
				if tp, err = telemetry.Setup(context.Background(), "workgraph", func(k string) string { return vars[k] }); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			}
			srv := start(b, func(c *server.Config) { c.Tracing = tp; c.RateLimit = -1 })
			var it struct {
				ID string `json:"id"`
			}
			call(b, srv, "POST", "/v1/projects", map[string]any{"name": "bench"}, 201, nil)
			call(b, srv, "POST", "/v1/projects/bench/items", map[string]any{"title": "one"}, 201, &it)
			path := srv.URL() + "/v1/projects/bench/items/" + it.ID
			req, _ := http.NewRequest("GET", path, nil)
			req.Header.Set("Authorization", "Bearer "+adminToken)
			b.ResetTimer()
			for range b.N {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("GET item: %d", resp.StatusCode)
				}
			}
		})
	}
}

// TestTraceOfFailure: a request the server fails (500 internal, here a
// schema the queries no longer fit) is a span with an error status and the
// problem code, unlike a refusal.
func TestTraceOfFailure(t *testing.T) {
	t.Parallel()
	// A fresh database: the test renames a column, a change of the
	// schema that a reused database would hand to the next test.
	srv, tp, r := tracedServer(t, func(c *server.Config) { c.DatabaseURL = dbtest.FreshURL(t) })
	if _, err := srv.Pool().Exec(context.Background(), "ALTER TABLE projects RENAME COLUMN name TO name_was"); err != nil {
		t.Fatal(err)
	}
	const traceID = "6e0c63257de34c92bf9efcd03927272e"
	tracedCall(t, srv, "/v1/projects", "00-"+traceID+"-b9c7c989f97918e1-01", "failing", map[string]any{"name": "x"}, 500, nil)
	spans := r.WaitFor(t, traceID, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
		return len(telemetrytest.Named(spans, "POST /v1/projects")) == 1 && len(telemetrytest.Named(spans, "db.Atomic")) == 1
	})
	req := telemetrytest.Named(spans, "POST /v1/projects")[0]
	wantAttrs(t, req, map[string]string{"http.response.status_code": "500", "workgraph.problem.code": "internal", "workgraph.request_id": "failing"})
	if !req.Error {
		t.Errorf("a 500 not marked as an error: %v", req)
	}
	// The insert ran on the pool (db.Atomic) and failed there.
	insert := telemetrytest.Named(spans, "db.Atomic")[0]
	if insert.ParentID != req.SpanID || !insert.Error || insert.Attrs["workgraph.problem.code"] != "internal" {
		t.Errorf("the failed statement's span %v: want an error below the request span %s", insert, req.SpanID)
	}
}
