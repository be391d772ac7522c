package db

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The names of the spans of database work, one per transaction on a pool
// (savepoints and the steps Join runs inside a caller's transaction are
// part of that transaction's span).
const (
	spanTx       = "db.InTx"
	spanReadTx   = "db.InReadTx"
	spanAtomic   = "db.Atomic"
	spanPipeline = "db.Pipeline"
)

// startSpan starts the span of a transaction when ctx's span records (a
// traced request); otherwise it costs a context lookup.
func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return telemetry.StartTx(ctx, name)
}

// endSpan ends span with the (translated) error the transaction returned:
// its code, and an error status for the server's failures (503, 500), not
// for refusals (a lost lease is an answer, not a failure). The span also
// gets the tags its request learnt meanwhile (telemetry.EndTx).
func endSpan(ctx context.Context, span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	var code wgerr.Code
	var status int
	if err != nil {
		code, status = wgerr.HTTPStatus(err)
	}
	telemetry.EndTx(ctx, span, err, string(code), status >= 500)
}
