// Package telemetrytest is an OTLP/HTTP receiver for tests: a handler on
// loopback that decodes the spans an exporter sends (protobuf, as
// workgraph's exporter sends them by default) and keeps them for the
// test to look at.
package telemetrytest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, its ids in hex as traceparent spells them.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	// Kind is "server", "client", "internal", ...
	Kind string
	// Attrs are the span's attributes, each value as a string.
	Attrs map[string]string
	// Resource is the attributes of the process that sent it.
	Resource map[string]string
	// Error reports a span whose status is an error.
	Error bool
}

func (s Span) String() string {
	keys := make([]string, 0, len(s.Attrs))
	for k := range s.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q trace=%s span=%s parent=%s", s.Kind, s.Name, s.TraceID, s.SpanID, s.ParentID)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, s.Attrs[k])
	}
	return b.String()
}

// Receiver is a running OTLP/HTTP endpoint.
type Receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []Span
	// arrived is signalled (without blocking) after each export.
	arrived chan struct{}
}

// NewReceiver starts a receiver on a loopback port, closed at the test's
// end.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{arrived: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.export))
	t.Cleanup(r.srv.Close)
	return r
}

// Endpoint is the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) Endpoint() string { return r.srv.URL }

// Env is an environment naming the receiver as the OTLP endpoint (for
// telemetry.Setup's getenv, or a child process's environment).
func (r *Receiver) Env() map[string]string {
	return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.srv.URL}
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "not an OTLP traces export", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct+": this receiver decodes protobuf only", http.StatusUnsupportedMediaType)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spans []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				spans = append(spans, Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(),
					Kind:  strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
					Attrs: attrs(s.GetAttributes()), Resource: res,
					Error: s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR",
				})
			}
		}
	}
	r.mu.Lock()
	r.got = append(r.got, spans...)
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
	raw, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(raw)
}

func attrs(kvs []*common.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *common.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(x.IntValue, 10)
		case *common.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(x.BoolValue)
		case *common.AnyValue_DoubleValue:
			out[kv.GetKey()] = strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans is every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.got...)
}

// Trace is the spans received so far of one trace.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor returns the spans of traceID once done says they are all there.
// Each round calls flush (the sender's ForceFlush, which exports what has
// ended so far; nil when the sender flushes by itself, as a process at its
// exit does), then waits for the next export; it fails the test after a
// minute, printing what arrived.
func (r *Receiver) WaitFor(t testing.TB, traceID string, flush func(context.Context) error, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if flush != nil {
			if err := flush(context.Background()); err != nil {
				t.Fatalf("flushing spans: %v", err)
			}
		}
		spans := r.Trace(traceID)
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, s := range r.Spans() {
				b.WriteString("\n  " + s.String())
			}
			t.Fatalf("the spans of trace %s never all arrived; received:%s", traceID, b.String())
		}
		select {
		case <-r.arrived:
		case <-time.After(20 * time.Millisecond):
			// A span still running ends in an instant (a request's span
			// ends just after its answer is written): flush again.
		}
	}
}

// Named is the spans of spans called name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Children is the spans of spans whose parent is parent.
func Children(spans []Span, parent Span) []Span {
	var out []Span
	for _, s := range spans {
		if s.ParentID == parent.SpanID {
			out = append(out, s)
		}
	}
	return out
}
