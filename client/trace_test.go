package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTracePropagation: a call carries the W3C trace context of its
// context's span: none without one, a remote parent's as it is, and,
// under a recording span, the call's own client span (a child of it,
// named by the route template), its retries included.
func TestTracePropagation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	answered := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("traceparent"))
		answered++
		first := answered == 1
		mu.Unlock()
		if first && strings.HasSuffix(r.URL.Path, "/retried") {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "t")
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context, path string) []string {
		t.Helper()
		mu.Lock()
		seen, answered = nil, 0
		mu.Unlock()
		if _, err := c.do(ctx, http.MethodGet, path, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	t.Run("NoSpan", func(t *testing.T) {
		if got := send(context.Background(), "/v1/x"); got[0] != "" {
			t.Fatalf("traceparent %q sent without a span", got[0])
		}
	})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	t.Run("RemoteParent", func(t *testing.T) {
		if got := send(remote, "/v1/x"); got[0] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
			t.Fatalf("traceparent %q, want the remote parent's", got[0])
		}
	})
	t.Run("RecordingSpan", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		ctx, parent := tp.Tracer("test").Start(remote, "agent step")
		id := "0b3c2b4e-6f0a-4c7e-9d55-3f4b0c1d2e3f"
		got := send(ctx, "/v1/projects/p1/items/"+id+"/retried")
		parent.End()
		if len(got) != 2 || got[0] != got[1] {
			t.Fatalf("traceparents %q: want the same one on both attempts", got)
		}
		var call sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.SpanKind() == trace.SpanKindClient {
				call = s
			}
		}
		if call == nil {
			t.Fatalf("no client span among %d ended", len(rec.Ended()))
		}
		if call.Name() != "GET /v1/projects/{project}/items/{id}/retried" || call.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Fatalf("client span %q below %v, want the route template below the caller's span", call.Name(), call.Parent().SpanID())
		}
		if want := "00-" + tid.String() + "-" + call.SpanContext().SpanID().String() + "-01"; got[0] != want {
			t.Fatalf("traceparent %q, want the client span's %q", got[0], want)
		}
		var attempts int64
		for _, kv := range call.Attributes() {
			if kv.Key == "workgraph.client.attempts" {
				attempts = kv.Value.AsInt64()
			}
		}
		if attempts != 2 {
			t.Fatalf("attempts attribute %d, want 2", attempts)
		}
	})
}
