package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceCall is the context a tool call runs in, and its span: the call's
// own W3C trace context when the agent sent one in the request's _meta
// ("traceparent", "tracestate", as MCP's OpenTelemetry convention puts
// it), else Config.Parent (the TRACEPARENT `workgraph mcp` was started
// with), as the parent; the span "mcp tools/call NAME" when Config.Tracer
// records. The workgraph calls the tool makes carry that context, so they
// join the agent's trace.
func (s *Server) traceCall(ctx context.Context, req *sdk.CallToolRequest, name string) (context.Context, trace.Span) {
	if tp := metaString(req, "traceparent"); tp != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": metaString(req, "tracestate")})
	} else if !trace.SpanContextFromContext(ctx).IsValid() && s.cfg.Parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, s.cfg.Parent)
	}
	if s.cfg.Tracer == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return s.cfg.Tracer.Start(ctx, "mcp tools/call "+name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name)))
}

// endCall ends a tool call's span; failed marks a tool error.
func endCall(span trace.Span, failed bool, message string) {
	if failed && span.IsRecording() {
		span.SetStatus(codes.Error, message)
	}
	span.End()
}

// metaString is the string value of the request's _meta key, or "".
func metaString(req *sdk.CallToolRequest, key string) string {
	if req == nil || req.Params == nil {
		return ""
	}
	v, _ := req.Params.Meta[key].(string)
	return v
}
