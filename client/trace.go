package client

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The client joins the caller's trace: every request carries the W3C
// traceparent (and tracestate) of the span in its context, so the
// server's span of it is a child of the caller's. When that span records
// (the caller set an OpenTelemetry SDK up), the call, its retries
// included, is a client span of its own, started through the caller
// span's provider; otherwise the client starts nothing and sends the
// caller's span as it is (a remote parent, e.g. TRACEPARENT from the
// environment). A context without a span sends no traceparent.

var traceContext = propagation.TraceContext{}

// startCall starts the client span of one call (all its attempts) when
// the span of ctx records.
func startCall(ctx context.Context, method, path string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	route := routeOf(path)
	return parent.TracerProvider().Tracer("github.com/workgraph-dev/workgraph/client").Start(ctx, method+" "+route,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("http.request.method", method),
			attribute.String("url.template", route),
		))
}

// endCall ends a call's span with its final status and error.
func endCall(span trace.Span, attempts, status int, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if attempts > 1 {
		span.SetAttributes(attribute.Int("workgraph.client.attempts", attempts))
	}
	var e *Error
	if errors.As(err, &e) {
		span.SetAttributes(attribute.String("workgraph.problem.code", e.Code))
	}
	if err != nil && (status == 0 || status >= 500) {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// injectTrace sets req's traceparent and tracestate from ctx's span.
func injectTrace(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// routeOf is path with its identifiers replaced by their parameter names
// (/v1/projects/{project}/items/{id}), so span names stay few.
func routeOf(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		switch {
		case i > 0 && parts[i-1] == "projects":
			parts[i] = "{project}"
		case p != "" && uuid.Validate(p) == nil:
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}
