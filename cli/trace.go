package cli

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/workgraph-dev/workgraph/telemetry"
)

// flushTimeout bounds the send of the last spans when a command ends (a
// collector that is down must not hold the exit).
const flushTimeout = 5 * time.Second

// tracing is a long-running command's tracing (serve, work, mcp): on when
// the OTEL_ variables name an endpoint, else nothing at all.
type tracing struct {
	*telemetry.Provider
	log *slog.Logger
}

// setupTracing makes the command's provider from the process environment;
// service is its service.name. What the exporter reports (a collector
// that cannot be reached) is logged to log, in the command's log format.
func setupTracing(ctx context.Context, service string, log *slog.Logger) (tracing, error) {
	p, err := telemetry.Setup(ctx, service, os.Getenv)
	if err != nil {
		return tracing{}, &exitError{code: ExitUsage, err: err}
	}
	if p.Enabled() {
		telemetry.LogTo(log)
	}
	return tracing{Provider: p, log: log}, nil
}

// shutdown sends the spans not yet sent, bounded by flushTimeout.
func (t tracing) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		t.log.Warn("tracing: sending the last spans", "err", err)
	}
}
