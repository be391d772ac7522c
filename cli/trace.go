package cli

import (
	"context"
	"fmt"
	"io"
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
	errOut io.Writer
}

// setupTracing makes the command's provider from the process environment;
// service is its service.name.
func setupTracing(ctx context.Context, service string, errOut io.Writer) (tracing, error) {
	p, err := telemetry.Setup(ctx, service, os.Getenv)
	if err != nil {
		return tracing{}, &exitError{code: ExitUsage, err: err}
	}
	return tracing{Provider: p, errOut: errOut}, nil
}

// shutdown sends the spans not yet sent, bounded by flushTimeout.
func (t tracing) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		fmt.Fprintf(t.errOut, "workgraph: sending the last spans: %v\n", err)
	}
}
