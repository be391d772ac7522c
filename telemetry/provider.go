package telemetry

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/workgraph-dev/workgraph/buildinfo"
)

// The environment variables Setup reads itself. The exporter and the SDK
// read the other standard ones (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, OTEL_TRACES_SAMPLER and _ARG, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*) from the process environment.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
)

// Provider is a process's tracing: a real tracer provider exporting over
// OTLP/HTTP, or, when tracing is off, nothing (a nil *Provider is off
// too). Its methods are safe on nil.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// Setup makes the process's Provider from the environment getenv reads
// (os.Getenv in the binary): tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT
// (the collector's base URL; spans go to its /v1/traces) or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL, which wins) is set,
// unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. When off, the
// Provider is nil: no exporter, no SDK, nothing started. service names the
// process (service.name, unless OTEL_SERVICE_NAME says otherwise); the
// build (buildinfo) is service.version. The protocol is OTLP over HTTP,
// protobuf (http/protobuf) or JSON (http/json); grpc is refused.
func Setup(ctx context.Context, service string, getenv func(string) string) (*Provider, error) {
	url, from, on := endpoint(getenv)
	if !on {
		return nil, nil
	}
	if !httpURL(url) {
		return nil, fmt.Errorf("telemetry: %s=%q is not an http:// or https:// URL with a host, e.g. http://collector:4318", from, getenv(from))
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(url)}
	proto := getenv(EnvTracesProtocol)
	if proto == "" {
		proto = getenv(EnvProtocol)
	}
	switch proto {
	case "", "http/protobuf":
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf))
	case "http/json":
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	default:
		return nil, fmt.Errorf("telemetry: %s=%q: workgraph sends traces over OTLP/HTTP only (http/protobuf or http/json)", EnvProtocol, proto)
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP exporter for %s: %w", url, err)
	}
	bi := buildinfo.Get()
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", service),
			attribute.String("service.version", bi.Version),
			attribute.String("workgraph.commit", bi.Commit),
		),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		// Last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: the resource: %w", err)
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// endpoint is the URL spans are sent to, the variable it comes from, and
// whether tracing is on.
func endpoint(getenv func(string) string) (string, string, bool) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") ||
		strings.TrimSpace(getenv(EnvTracesExporter)) == "none" {
		return "", "", false
	}
	if u := strings.TrimSpace(getenv(EnvTracesEndpoint)); u != "" {
		return u, EnvTracesEndpoint, true
	}
	if u := strings.TrimSpace(getenv(EnvEndpoint)); u != "" {
		return strings.TrimRight(u, "/") + "/v1/traces", EnvEndpoint, true
	}
	return "", "", false
}

// httpURL reports whether s is an absolute http or https URL with a host:
// the exporter would take anything else (a forgotten scheme) for a URL
// without a host and fail at every export.
func httpURL(s string) bool {
	u, err := neturl.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// TracerProvider is the provider to start spans with: a no-op one when
// tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider {
	if !p.Enabled() {
		return noop.NewTracerProvider()
	}
	return p.sdk
}

// Tracer is the tracer of the workgraph package named scope (e.g.
// "server"); a no-op one when tracing is off.
func (p *Provider) Tracer(scope string) trace.Tracer {
	return p.TracerProvider().Tracer(instrumentation + scope)
}

// instrumentation prefixes the instrumentation scope of every tracer.
const instrumentation = "github.com/workgraph-dev/workgraph/"

// Shutdown sends the spans not yet sent and stops the exporter, bounded by
// ctx. Nothing happens when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// ForceFlush sends the spans ended so far (tests wait on it instead of
// sleeping).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}
