package telemetry

import (
	"log/slog"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// LogTo sends what the OpenTelemetry SDK and its exporter report (a failed
// export, a dropped batch) to log, errors at warn, instead of to Go's log
// package on standard error, so that they are lines of the process's own
// format (one JSON object a line with --log-format json). It sets
// OpenTelemetry's process-wide error handler and logger: a command calls it
// once, when it sets tracing up.
func LogTo(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: OpenTelemetry reported an error", "err", err)
	}))
	otel.SetLogger(logr.FromSlogHandler(log.With("component", "opentelemetry").Handler()))
}
