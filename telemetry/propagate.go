package telemetry

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the one propagator: W3C Trace Context (traceparent, tracestate).
var w3c = propagation.TraceContext{}

// The environment variables a child process finds its parent span in (the
// convention of OpenTelemetry's environment-variable carriers: the header
// names in upper case).
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// Extract is ctx with the remote parent span named by h's traceparent and
// tracestate; ctx itself when h names none (or a malformed one).
func Extract(ctx context.Context, h http.Header) context.Context {
	if h.Get("traceparent") == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// Inject sets h's traceparent and tracestate to the span of ctx; nothing
// when ctx carries no valid span.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// FromEnv is ctx with the remote parent span TRACEPARENT and TRACESTATE
// name in the environment getenv reads (a process started by `workgraph
// work`, or by any tool that passes trace context this way); ctx itself
// when TRACEPARENT is unset or malformed.
func FromEnv(ctx context.Context, getenv func(string) string) context.Context {
	tp := getenv(EnvTraceparent)
	if tp == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": getenv(EnvTracestate)})
}

// Env is the environment ("NAME=value" strings) that hands the span of ctx
// to a child process: TRACEPARENT, and TRACESTATE when there is one; nil
// when ctx carries no valid span.
func Env(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	w3c.Inject(ctx, m)
	var env []string
	if v := m["traceparent"]; v != "" {
		env = append(env, EnvTraceparent+"="+v)
	}
	if v := m["tracestate"]; v != "" {
		env = append(env, EnvTracestate+"="+v)
	}
	return env
}

// WithoutEnv is env without TRACEPARENT and TRACESTATE (what a parent
// replaces with its own span's).
func WithoutEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, EnvTraceparent+"=") || strings.HasPrefix(kv, EnvTracestate+"=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
