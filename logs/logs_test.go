package logs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/workgraph-dev/workgraph/logs"
)

func TestNew(t *testing.T) {
	t.Parallel()
	t.Run("JSONCarriesRequestID", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log, err := logs.New(&b, logs.FormatJSON, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		ctx := logs.WithRequestID(context.Background(), "req-7")
		log.With("component", "api").InfoContext(ctx, "in a request", "n", 1)
		log.Info("outside a request")
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("got %d lines: %q", len(lines), b.String())
		}
		var in, out map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(lines[1]), &out); err != nil {
			t.Fatal(err)
		}
		if in["request_id"] != "req-7" || in["component"] != "api" || in["msg"] != "in a request" {
			t.Errorf("line in a request: %v", in)
		}
		if _, ok := out["request_id"]; ok {
			t.Errorf("line outside a request has a request id: %v", out)
		}
	})
	t.Run("TracedRequestNamesTrace", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log, err := logs.New(&b, logs.FormatJSON, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "request")
		defer span.End()
		log.InfoContext(logs.WithRequestID(ctx, "req-8"), "traced")
		var line map[string]any
		if err := json.Unmarshal(b.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		sc := span.SpanContext()
		if line["request_id"] != "req-8" || line["trace_id"] != sc.TraceID().String() || line["span_id"] != sc.SpanID().String() {
			t.Errorf("traced line %v: want request_id req-8, trace_id %s, span_id %s", line, sc.TraceID(), sc.SpanID())
		}
	})
	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log, err := logs.New(&b, logs.FormatText, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.WarnContext(logs.WithRequestID(context.Background(), "abc"), "unavailable")
		if got := b.String(); !strings.Contains(got, "level=WARN msg=unavailable request_id=abc") {
			t.Errorf("got %q", got)
		}
	})
	t.Run("ErrUnknownFormat", func(t *testing.T) {
		t.Parallel()
		if _, err := logs.New(&bytes.Buffer{}, "xml", slog.LevelInfo); err == nil {
			t.Fatal("xml accepted")
		}
	})
	t.Run("WithRequestIDsOnce", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log := logs.WithRequestIDs(logs.WithRequestIDs(slog.New(slog.NewJSONHandler(&b, nil))))
		log.InfoContext(logs.WithRequestID(context.Background(), "x"), "m")
		if n := strings.Count(b.String(), `"request_id"`); n != 1 {
			t.Errorf("request_id %d times: %s", n, b.String())
		}
	})
}

func TestAcceptRequestID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"trace-42", "4bf92f3577b34da6a3ce929d0e0e4736", "a.b_c-d:e/f+g=", strings.Repeat("x", 128)} {
		if got := logs.AcceptRequestID(id); got != id {
			t.Errorf("AcceptRequestID(%q) = %q, want it kept", id, got)
		}
	}
	for _, id := range []string{"", "bad id", "tab\there", "new\nline", strings.Repeat("x", 129), "quote\"", "ünï"} {
		got := logs.AcceptRequestID(id)
		if got == id || len(got) != 24 || logs.AcceptRequestID(got) != got {
			t.Errorf("AcceptRequestID(%q) = %q, want a new sane id", id, got)
		}
	}
}

// TestDurations: a duration in a JSON line is a number of milliseconds
// under its key with "_ms" added (what a log pipeline sums and compares,
// read without knowing Go's nanoseconds), also in a group and in the
// attributes a logger carries; in a text line it is a Go duration under its
// own key (what a person reads).
func TestDurations(t *testing.T) {
	t.Parallel()
	t.Run("JSONMilliseconds", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log, err := logs.New(&b, logs.FormatJSON, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.With("interval", 10*time.Second).Info("took", "duration", 1175422146*time.Nanosecond,
			slog.Group("pg", "elapsed", 1500*time.Microsecond), "wait_ms", 2*time.Millisecond, "n", 3)
		var line map[string]any
		if err := json.Unmarshal(b.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		pg, _ := line["pg"].(map[string]any)
		if line["duration_ms"] != 1175.422 || line["interval_ms"] != 10000.0 || pg["elapsed_ms"] != 1.5 || line["wait_ms"] != 2.0 || line["n"] != 3.0 {
			t.Errorf("want milliseconds under keys ending in _ms: %s", b.String())
		}
		for _, k := range []string{"duration", "interval", "wait_ms_ms"} {
			if _, ok := line[k]; ok {
				t.Errorf("key %q is still there: %s", k, b.String())
			}
		}
	})
	t.Run("TextGoDuration", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		log, err := logs.New(&b, logs.FormatText, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("took", "duration", 1500*time.Microsecond)
		if !strings.Contains(b.String(), " duration=1.5ms") {
			t.Errorf("want duration=1.5ms: %s", b.String())
		}
	})
}
