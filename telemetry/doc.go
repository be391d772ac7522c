// Package telemetry owns workgraph's OpenTelemetry traces: the tracer
// provider made from the standard OTEL_ environment variables (spans sent
// over OTLP/HTTP; no provider, no exporter and no cost at all when no
// endpoint is set), the W3C trace context taken from and given to other
// processes (traceparent and tracestate headers; TRACEPARENT and
// TRACESTATE in a child process's environment), and the names of the spans
// and attributes workgraph records.
//
// Spans below a request (database transactions, the Go client's calls) are
// children of the span in their context, started through that span's own
// provider: a context without a recording span starts nothing, so a
// package records spans without any global state, and a process that never
// set tracing up pays one context lookup per would-be span.
package telemetry
