package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes workgraph sets on its spans (besides OpenTelemetry's
// semantic conventions for HTTP and databases).
const (
	AttrProject     = attribute.Key("workgraph.project.id")
	AttrItem        = attribute.Key("workgraph.item.id")
	AttrLease       = attribute.Key("workgraph.lease.id")
	AttrEpoch       = attribute.Key("workgraph.lease.epoch")
	AttrRequestID   = attribute.Key("workgraph.request_id")
	AttrProblemCode = attribute.Key("workgraph.problem.code")
	AttrOutcome     = attribute.Key("workgraph.outcome")
)

// Tags are the workgraph identifiers of what a span is about; zero fields
// are unknown and not set.
type Tags struct {
	Project, Item, Lease uuid.UUID
	Epoch                int64
}

func (t Tags) attributes() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if t.Project != uuid.Nil {
		kv = append(kv, AttrProject.String(t.Project.String()))
	}
	if t.Item != uuid.Nil {
		kv = append(kv, AttrItem.String(t.Item.String()))
	}
	if t.Lease != uuid.Nil {
		kv = append(kv, AttrLease.String(t.Lease.String()))
	}
	if t.Epoch != 0 {
		kv = append(kv, AttrEpoch.Int64(t.Epoch))
	}
	return kv
}

// Recording reports whether ctx carries a span that records: what a caller
// checks before computing an attribute that costs something.
func Recording(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// Tag sets t's known identifiers on the span of ctx (a request's span, set
// by the handler that learns them) and remembers them for the spans
// started below it from now on (its database transactions). Nothing
// happens when ctx's span does not record.
func Tag(ctx context.Context, t Tags) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	kv := t.attributes()
	span.SetAttributes(kv...)
	if b, ok := ctx.Value(tagsKey{}).(*tagBag); ok {
		b.add(kv)
	}
}

// Set sets attributes on the span of ctx when it records.
func Set(ctx context.Context, kv ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(kv...)
	}
}

// Problem marks the span of ctx as answered with the problem code (an
// error for a server error, status >= 500; a refusal is not the server's
// error).
func Problem(ctx context.Context, code string, status int) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrProblemCode.String(code))
	if status >= 500 {
		span.SetStatus(codes.Error, code)
	}
}

// tagBag holds the Tags a request learnt so far, for its child spans.
type tagBag struct {
	mu sync.Mutex
	kv []attribute.KeyValue
}

type tagsKey struct{}

func (b *tagBag) add(kv []attribute.KeyValue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kv = append(b.kv, kv...)
}

func (b *tagBag) list() []attribute.KeyValue {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]attribute.KeyValue(nil), b.kv...)
}

// Start starts a child of the span of ctx, through that span's own
// provider, carrying the Tags its request learnt so far and kv. When ctx
// carries no recording span nothing is started: ctx comes back as it is,
// with its (non-recording) span, whose End does nothing.
func Start(ctx context.Context, name string, kind trace.SpanKind, kv ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	if b, ok := ctx.Value(tagsKey{}).(*tagBag); ok {
		kv = append(b.list(), kv...)
	}
	return parent.TracerProvider().Tracer(instrumentation+"telemetry").Start(ctx, name,
		trace.WithSpanKind(kind), trace.WithAttributes(kv...))
}

// End ends span. For an operation that returned err (not nil), code is
// its workgraph code (the workgraph.problem.code attribute) and failed
// says whether it is the server's failure (the span's status is then an
// error with err's message) rather than a refusal the caller caused.
func End(span trace.Span, err error, code string, failed bool) {
	if err != nil && span.IsRecording() {
		if code != "" {
			span.SetAttributes(AttrProblemCode.String(code))
		}
		if failed {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// EndTx ends the span of a database transaction like End, after setting on
// it the Tags its request learnt while it ran (a claim learns its item and
// lease inside its transaction).
func EndTx(ctx context.Context, span trace.Span, err error, code string, failed bool) {
	if span.IsRecording() {
		if b, ok := ctx.Value(tagsKey{}).(*tagBag); ok {
			span.SetAttributes(b.list()...)
		}
	}
	End(span, err, code, failed)
}

// StartTx starts the span of a database transaction (see Start); nothing
// when ctx's span does not record.
func StartTx(ctx context.Context, name string) (context.Context, trace.Span) {
	if !Recording(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	return Start(ctx, name, trace.SpanKindClient, attribute.String("db.system.name", "postgresql"))
}

// StartRequest starts the server span of an HTTP request: a child of the
// caller's traceparent when it sent one, named "METHOD route" (method
// OtherMethod: "HTTP route") with the
// route template in OpenAPI form ("/v1/leases/{id}/heartbeat", from
// Echo's "/v1/leases/:id/heartbeat"; "unmatched" for none), never the raw
// path. The context returned carries the span and collects the request's
// Tags for the spans started below it.
func StartRequest(ctx context.Context, tracer trace.Tracer, h http.Header, method, route, requestID string) (context.Context, trace.Span) {
	ctx = Extract(ctx, h)
	if route == "" {
		route = "unmatched"
	} else {
		route = templateForm(route)
	}
	ctx = context.WithValue(ctx, tagsKey{}, &tagBag{})
	name := method
	if method == OtherMethod {
		name = "HTTP" // the semantic conventions' name for a method not known
	}
	return tracer.Start(ctx, name+" "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", method),
		attribute.String("http.route", route),
		AttrRequestID.String(requestID),
	))
}

// OtherMethod is the http.request.method of a request whose method is
// not a standard one.
const OtherMethod = "_OTHER"

// EndRequest ends a request's span with its answer's status.
func EndRequest(span trace.Span, status int) {
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// templateForm turns Echo's ":param" segments into "{param}".
func templateForm(route string) string {
	if !strings.Contains(route, ":") {
		return route
	}
	parts := strings.Split(route, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}
