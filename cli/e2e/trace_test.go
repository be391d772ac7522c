package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/telemetry/telemetrytest"
)

// TestWorkTrace follows one agent run across processes in one trace: the
// supervisor, started with a TRACEPARENT of its own, makes its run a span
// below it, sends its claim and completion in the run's trace, and hands
// the command a TRACEPARENT naming the run's span; a workgraph command the
// command runs sends that trace context on, so the server's span of it is
// a child of the run.
func TestWorkTrace(t *testing.T) {
	t.Parallel()
	r := telemetrytest.NewReceiver(t)
	vars := r.Env()
	tp, err := telemetry.Setup(context.Background(), "workgraph", func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := setupWith(t, func(c *server.Config) { c.Tracing = tp })
	it := e.item("traced run")

	const (
		traceID = "5b8efff798038103d269b633813fc60c"
		outer   = "eee19b7ec3c1b174"
	)
	res := e.run(e.agentToken, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.Endpoint(),
		"TRACEPARENT=00-" + traceID + "-" + outer + "-01",
	}, "work", "--lease", "30s", "--", "sh", "-c",
		`"$WORKGRAPH_BIN" items show "$WORKGRAPH_ITEM_ID" >/dev/null && printf '{"traceparent": "%s"}' "$TRACEPARENT" > "$WORKGRAPH_RESULT_FILE"`)
	if res.code != 0 {
		t.Fatalf("work: %v", res)
	}
	got := e.get(it.ID)
	if got.State != client.StateDone {
		t.Fatalf("state %s, want done\n%v", got.State, res)
	}
	var child struct{ Traceparent string }
	if err := json.Unmarshal(got.Result, &child); err != nil {
		t.Fatalf("result %s: %v", got.Result, err)
	}
	parts := strings.Split(child.Traceparent, "-")
	if len(parts) != 4 || parts[1] != traceID {
		t.Fatalf("the command's TRACEPARENT %q is not of the run's trace %s", child.Traceparent, traceID)
	}
	runSpan := parts[2]

	// The supervisor sent its spans as it exited; the server's come with
	// its flush.
	spans := r.WaitFor(t, traceID, tp.ForceFlush, func(spans []telemetrytest.Span) bool {
		return len(telemetrytest.Named(spans, "workgraph work")) == 1 &&
			len(telemetrytest.Named(spans, "GET /v1/projects/{project}/items/{id}")) == 1 &&
			len(telemetrytest.Named(spans, "POST /v1/leases/{id}/complete")) == 2 // the client's and the server's
	})
	run := telemetrytest.Named(spans, "workgraph work")[0]
	if run.SpanID != runSpan || run.ParentID != outer {
		t.Fatalf("run span %v: want span %s (the command's TRACEPARENT) below %s (the supervisor's)", run, runSpan, outer)
	}
	if run.Resource["service.name"] != "workgraph-work" {
		t.Errorf("the run's resource %v: want service.name workgraph-work", run.Resource)
	}
	for k, v := range map[string]string{"workgraph.item.id": it.ID, "workgraph.outcome": "completed", "workgraph.lease.epoch": "1"} {
		if run.Attrs[k] != v {
			t.Errorf("run span: %s = %q, want %q (%v)", k, run.Attrs[k], v, run)
		}
	}
	// The supervisor's claim: its client span below the run, the server's
	// span below that.
	var claimed bool
	for _, c := range telemetrytest.Named(spans, "POST /v1/projects/{project}/claims") {
		if c.Kind == "client" && c.ParentID == run.SpanID {
			for _, s := range telemetrytest.Children(spans, c) {
				claimed = claimed || (s.Kind == "server" && s.Attrs["workgraph.item.id"] == it.ID)
			}
		}
	}
	if !claimed {
		t.Errorf("no claim span pair (client below the run, server below it) among %v", spans)
	}
	// The command's own call: the CLI in the child has no exporter, so
	// the server's span hangs straight below the run's.
	show := telemetrytest.Named(spans, "GET /v1/projects/{project}/items/{id}")[0]
	if show.ParentID != run.SpanID || show.Attrs["workgraph.item.id"] != it.ID {
		t.Errorf("the command's call %v: want a child of the run span %s", show, run.SpanID)
	}
}
