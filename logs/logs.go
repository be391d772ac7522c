// Package logs owns the server's log lines: their format (text or JSON,
// --log-format) and the request id a request's context carries, which every
// line logged with that context names (request_id), whichever package logs
// it; a traced request's lines also name its trace and span (trace_id,
// span_id).
package logs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Formats of New.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// New is a logger writing lines of format (FormatText: logfmt-style
// key=value; FormatJSON: one JSON object a line) at level and above to w;
// every line logged with a context from WithRequestID carries request_id.
// A duration is a number of milliseconds under its key with "_ms" added in
// JSON, a Go duration (1.5s) in text.
func New(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case FormatText, "":
		h = slog.NewTextHandler(w, opts)
	case FormatJSON:
		opts.ReplaceAttr = jsonDuration
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q is not text or json", format)
	}
	return slog.New(requestIDs{h}), nil
}

// jsonDuration writes a duration of a JSON line as a number of
// milliseconds (to the microsecond) under its key with "_ms" added
// ("duration_ms": 12.5), rather than slog's integer nanoseconds under a key
// that does not say so; a key that ends in "_ms" already keeps its name.
// Text lines keep Go's form (duration=12.5ms).
func jsonDuration(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "_ms") {
		key += "_ms"
	}
	ms := math.Round(float64(a.Value.Duration())/float64(time.Microsecond)) / 1000
	return slog.Float64(key, ms)
}

// WithRequestIDs is log, its lines logged with a context from WithRequestID
// carrying request_id (log itself when it does already).
func WithRequestIDs(log *slog.Logger) *slog.Logger {
	if _, ok := log.Handler().(requestIDs); ok {
		return log
	}
	return slog.New(requestIDs{log.Handler()})
}

// AcceptRequestID is the id a request goes by: the caller's own (its
// X-Request-Id) when it is 1..128 letters, digits or . _ - : / + = (enough
// for UUIDs, trace ids and the like; nothing a log or a header could
// misread), else a new random one.
func AcceptRequestID(callers string) string {
	if saneRequestID(callers) {
		return callers
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/+=", r)
		if !ok {
			return false
		}
	}
	return true
}

type requestIDKey struct{}

// WithRequestID is ctx naming the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx names, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestIDs adds request_id to records whose context names one, and
// trace_id and span_id to those whose context carries a recording span (a
// traced request: its lines and its spans find each other).
type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	id := RequestID(ctx)
	span := trace.SpanFromContext(ctx)
	if id == "" && !span.IsRecording() {
		return h.Handler.Handle(ctx, r)
	}
	r = r.Clone()
	if id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if span.IsRecording() {
		sc := span.SpanContext()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler {
	return requestIDs{h.Handler.WithGroup(name)}
}
