package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/telemetry/telemetrytest"
)

// TestToolCallsCarryTrace: a tool call's workgraph requests join the
// agent's trace: the traceparent of the call's _meta when it sends one,
// else the TRACEPARENT the MCP server was started with (Config.Parent);
// with a Tracer, the call is a span of its own between them.
func TestToolCallsCarryTrace(t *testing.T) {
	t.Parallel()
	r := telemetrytest.NewReceiver(t)
	vars := r.Env()
	tp, err := telemetry.Setup(context.Background(), "workgraph", func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := setupWith(t, func(c *server.Config) { c.Tracing = tp })

	const (
		startTrace = "11111111111111111111111111111111"
		startSpan  = "2222222222222222"
		callTrace  = "33333333333333333333333333333333"
		callSpan   = "4444444444444444"
	)
	tid, _ := trace.TraceIDFromHex(startTrace)
	sid, _ := trace.SpanIDFromHex(startSpan)
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	cs := connectInMemory(t, e.mcpServer(t, Config{Parent: parent}))
	create := func(meta sdk.Meta) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Meta: meta, Name: "create_task", Arguments: map[string]any{"title": "traced"}})
		if err != nil || res.IsError {
			t.Fatalf("create_task: %v %s", err, text(res))
		}
	}
	const route = "POST /v1/projects/{project}/items"
	serverSpan := func(traceID string) telemetrytest.Span {
		t.Helper()
		spans := r.WaitFor(t, traceID, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
			return len(telemetrytest.Named(spans, route)) == 1
		})
		return telemetrytest.Named(spans, route)[0]
	}

	t.Run("ProcessParent", func(t *testing.T) {
		create(nil)
		if s := serverSpan(startTrace); s.ParentID != startSpan {
			t.Fatalf("server span %v: want a child of the process's TRACEPARENT span %s", s, startSpan)
		}
	})
	t.Run("CallMeta", func(t *testing.T) {
		create(sdk.Meta{"traceparent": "00-" + callTrace + "-" + callSpan + "-01"})
		if s := serverSpan(callTrace); s.ParentID != callSpan {
			t.Fatalf("server span %v: want a child of the call's traceparent span %s", s, callSpan)
		}
	})
	t.Run("ToolSpan", func(t *testing.T) {
		const traced = "55555555555555555555555555555555"
		cs := connectInMemory(t, e.mcpServer(t, Config{Tracer: tp.Tracer("mcp")}))
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "create_task", Arguments: map[string]any{"title": "traced"},
			Meta: sdk.Meta{"traceparent": "00-" + traced + "-" + callSpan + "-01"}})
		if err != nil || res.IsError {
			t.Fatalf("create_task: %v %s", err, text(res))
		}
		spans := r.WaitFor(t, traced, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
			return len(telemetrytest.Named(spans, "mcp tools/call create_task")) == 1 && len(telemetrytest.Named(spans, route)) == 2
		})
		tool := telemetrytest.Named(spans, "mcp tools/call create_task")[0]
		if tool.ParentID != callSpan {
			t.Fatalf("tool span %v: want a child of %s", tool, callSpan)
		}
		for _, s := range telemetrytest.Named(spans, route) {
			if s.Kind == "client" && s.ParentID != tool.SpanID {
				t.Fatalf("client span %v: want a child of the tool span %s", s, tool.SpanID)
			}
		}
	})
}
