package telemetry_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/telemetry/telemetrytest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestSetupOff: without an endpoint (or with tracing switched off by the
// standard variables) there is no provider and so no exporter; what the
// code starts through it records nothing.
func TestSetupOff(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"NoEndpoint":    {},
		"SDKDisabled":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		"ExporterNone":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
		"BlankEndpoint": {"OTEL_EXPORTER_OTLP_ENDPOINT": "  "},
	}
	for name, vars := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := telemetry.Setup(context.Background(), "workgraph", env(vars))
			if err != nil {
				t.Fatal(err)
			}
			if p != nil || p.Enabled() {
				t.Fatalf("Setup made a provider (%v) without an endpoint", p)
			}
			_, span := p.Tracer("test").Start(context.Background(), "x")
			if span.IsRecording() {
				t.Fatal("a span of the provider that is off records")
			}
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSetupRefusesGRPC: the exporter speaks OTLP over HTTP only; a gRPC
// protocol is refused at start, not ignored.
func TestSetupRefusesGRPC(t *testing.T) {
	t.Parallel()
	_, err := telemetry.Setup(context.Background(), "workgraph", env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
	}))
	if err == nil || !strings.Contains(err.Error(), "OTLP/HTTP") {
		t.Fatalf("err = %v, want a refusal of grpc", err)
	}
}

// TestSetupRefusesEndpointWithoutScheme: an endpoint that is not an http
// or https URL with a host (collector:4318, the scheme forgotten) is
// refused at start, naming the variable: it used to start and then send
// every batch to "http:///", failing at each export.
func TestSetupRefusesEndpointWithoutScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, value string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318/v1/traces"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"},
	} {
		_, err := telemetry.Setup(context.Background(), "workgraph", env(map[string]string{tc.env: tc.value}))
		if err == nil || !strings.Contains(err.Error(), tc.env) {
			t.Errorf("%s=%q: err = %v, want a refusal naming the variable", tc.env, tc.value, err)
		}
	}
	for _, ok := range []string{"http://collector:4318", "https://collector.example/otlp/", "http://[::1]:4318"} {
		p, err := telemetry.Setup(context.Background(), "workgraph", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ok}))
		if err != nil || !p.Enabled() {
			t.Errorf("%q: %v, enabled %v; want tracing on", ok, err, p.Enabled())
		}
		_ = p.Shutdown(context.Background())
	}
}

// TestSetupExports: with an endpoint, spans reach it with the service's
// name and version; the traces-specific variable (a full URL) wins over
// the base one.
func TestSetupExports(t *testing.T) {
	t.Parallel()
	tests := map[string]func(r *telemetrytest.Receiver) map[string]string{
		"BaseEndpoint": func(r *telemetrytest.Receiver) map[string]string { return r.Env() },
		"TracesEndpointWins": func(r *telemetrytest.Receiver) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": r.Endpoint() + "/v1/traces",
			}
		},
	}
	for name, vars := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := telemetrytest.NewReceiver(t)
			p, err := telemetry.Setup(context.Background(), "workgraph-test", env(vars(r)))
			if err != nil {
				t.Fatal(err)
			}
			if !p.Enabled() {
				t.Fatal("no provider with an endpoint set")
			}
			_, span := p.Tracer("test").Start(context.Background(), "one")
			id := span.SpanContext().TraceID().String()
			span.End()
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := r.Trace(id)
			if len(got) != 1 || got[0].Name != "one" {
				t.Fatalf("received %v, want the span one", got)
			}
			if res := got[0].Resource; res["service.name"] != "workgraph-test" || res["service.version"] != buildinfo.Get().Version {
				t.Fatalf("resource %v: want service.name workgraph-test, service.version %s", res, buildinfo.Get().Version)
			}
		})
	}
}

// TestNoCostWhenOff: without a recording span in the context, starting a
// transaction's span and tagging a request allocate nothing.
func TestNoCostWhenOff(t *testing.T) {
	ctx := context.Background()
	tags := telemetry.Tags{Project: uuid.New(), Lease: uuid.New(), Epoch: 3}
	allocs := testing.AllocsPerRun(100, func() {
		c, span := telemetry.StartTx(ctx, "db.InTx")
		telemetry.Tag(c, tags)
		telemetry.End(span, nil, "", false)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per untraced transaction, want 0", allocs)
	}
}

// TestEnvCarriesSpan: the environment a parent hands its child names the
// parent's span, and the child reads it back as its remote parent.
func TestEnvCarriesSpan(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=v1")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), sc)

	e := telemetry.Env(ctx)
	want := []string{"TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "TRACESTATE=vendor=v1"}
	if strings.Join(e, " ") != strings.Join(want, " ") {
		t.Fatalf("Env = %q, want %q", e, want)
	}
	vars := map[string]string{}
	for _, kv := range e {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	back := trace.SpanContextFromContext(telemetry.FromEnv(context.Background(), env(vars)))
	if back.TraceID() != tid || back.SpanID() != sid || back.TraceState().Get("vendor") != "v1" || !back.IsRemote() {
		t.Fatalf("FromEnv = %v, want the parent's span", back)
	}
	if telemetry.Env(context.Background()) != nil {
		t.Fatal("Env of a context without a span is not empty")
	}
	if got := telemetry.WithoutEnv([]string{"A=1", "TRACEPARENT=x", "TRACESTATE=y", "B=2"}); strings.Join(got, " ") != "A=1 B=2" {
		t.Fatalf("WithoutEnv = %q", got)
	}
	h := http.Header{}
	telemetry.Inject(ctx, h)
	if h.Get("traceparent") != strings.TrimPrefix(want[0], "TRACEPARENT=") {
		t.Fatalf("Inject: traceparent %q", h.Get("traceparent"))
	}
	if got := trace.SpanContextFromContext(telemetry.Extract(context.Background(), h)); got.TraceID() != tid {
		t.Fatalf("Extract = %v", got)
	}
}
