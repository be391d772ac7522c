package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/logs"
	"github.com/workgraph-dev/workgraph/server"
)

func newServeCmd(stdio IO) *cobra.Command {
	var cfg server.Config
	var bad envProblems
	var levelName, logFormat string
	var level slog.Level
	var bodyMiB int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the workgraph server (embedded PostgreSQL when no database URL is given)",
		Long: `Run the workgraph server.

With no --database-url (or WORKGRAPH_DATABASE_URL) the server starts its own
PostgreSQL cluster from the installed PostgreSQL binaries, keeps its data in
--data-dir (WORKGRAPH_DATA_DIR) and stops it on exit. It owns that folder
while it runs: a second server on the same folder is refused, naming this
one's pid. A cluster left running by a server that was killed is adopted and
stopped on exit (or see ` + "`workgraph db status|stop`" + `).

The listen address is bound before anything else, so a busy address fails
at once; a malformed one (--addr, --metrics-addr, --pprof-addr: no port, a
port beyond 65535) is a usage error (exit 2).

With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
every request and database transaction is an OpenTelemetry span sent over
OTLP/HTTP; an agent's traceparent header makes the request's span its child.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bad.check(cmd.Flags()); err != nil {
				return err
			}
			for _, a := range []struct{ flag, env, addr string }{
				{"addr", "WORKGRAPH_ADDR", cfg.Addr},
				{"metrics-addr", "WORKGRAPH_METRICS_ADDR", cfg.MetricsAddr},
				{"pprof-addr", "WORKGRAPH_PPROF_ADDR", cfg.PprofAddr},
			} {
				if err := checkListenAddr(cmd.Flags(), a.flag, a.env, a.addr); err != nil {
					return err
				}
			}
			if bodyMiB < 0 {
				return &exitError{code: ExitUsage, err: fmt.Errorf("--body-memory-mib: %d is negative (0: the default, 64)", bodyMiB)}
			}
			if bodyMiB > maxBodyMiB {
				return &exitError{code: ExitUsage, err: fmt.Errorf("--body-memory-mib: %d is more than %d (1 TiB)", bodyMiB, maxBodyMiB)}
			}
			cfg.BodyBytesInFlight = int64(bodyMiB) << 20
			if err := level.UnmarshalText([]byte(levelName)); err != nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("--log-level: %q is not debug, info, warn or error", levelName)}
			}
			log, err := logs.New(stdio.Err, logFormat, level)
			if err != nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("--log-format: %q is not text or json", logFormat)}
			}
			cfg.Logger = log
			cfg.FirstStartOut, cfg.FirstStartFormat = stdio.Err, logFormat
			tr, err := setupTracing(cmd.Context(), "workgraph", log)
			if err != nil {
				return loggedFailure(log, logFormat, err)
			}
			// After the server: the spans of its last requests are sent.
			defer tr.shutdown()
			cfg.Tracing = tr.Provider
			if tr.Enabled() {
				log.Info("tracing: sending spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)")
			}
			return loggedFailure(log, logFormat, server.Run(cmd.Context(), cfg))
		},
	}
	f := cmd.Flags()
	bad = addPolicyFlags(f, &cfg)
	f.StringVar(&cfg.DatabaseURL, "database-url", envOr("WORKGRAPH_DATABASE_URL", ""), "PostgreSQL URL (env WORKGRAPH_DATABASE_URL); empty starts an embedded cluster")
	f.StringVar(&cfg.ListenDatabaseURL, "listen-database-url", envOr("WORKGRAPH_LISTEN_DATABASE_URL", ""),
		"direct PostgreSQL URL for LISTEN and the migration lock when --database-url goes through PgBouncer in transaction mode (env WORKGRAPH_LISTEN_DATABASE_URL); empty: --database-url")
	f.StringVar(&cfg.DataDir, "data-dir", envOr("WORKGRAPH_DATA_DIR", ""), "directory of the embedded cluster's data (env WORKGRAPH_DATA_DIR)")
	f.StringVar(&cfg.Addr, "addr", envOr("WORKGRAPH_ADDR", "127.0.0.1:8080"), "address to listen on (env WORKGRAPH_ADDR)")
	f.BoolVar(&cfg.Demo, "demo", false, "load the sample project \"demo\" unless it exists (prints a human token to sign in with)")
	f.StringVar(&levelName, "log-level", envOr("WORKGRAPH_LOG_LEVEL", "info"),
		"debug (also one line per API request), info, warn or error (env WORKGRAPH_LOG_LEVEL)")
	f.StringVar(&logFormat, "log-format", envOr("WORKGRAPH_LOG_FORMAT", logs.FormatText),
		"text (key=value lines) or json (one object a line, durations in milliseconds under keys ending in _ms) (env WORKGRAPH_LOG_FORMAT); lines of an API request carry its request_id")
	f.StringVar(&cfg.BootstrapToken, "bootstrap-token", envOr("WORKGRAPH_BOOTSTRAP_TOKEN", ""), "make sure an admin token with this secret exists (env WORKGRAPH_BOOTSTRAP_TOKEN)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", envOr("WORKGRAPH_METRICS_ADDR", ""),
		"serve Prometheus /metrics on this address of its own, e.g. 127.0.0.1:9464 (env WORKGRAPH_METRICS_ADDR); empty: none")
	floatFlag(f, bad, &cfg.RateLimit, "rate-limit", "WORKGRAPH_RATE_LIMIT", "requests per second each API token may send (0: the default, negative: unlimited)")
	boolFlag(f, bad, &cfg.MetricsOnMain, "metrics-on-main", "WORKGRAPH_METRICS_ON_MAIN", "also serve /metrics on --addr, without authentication")
	f.StringVar(&cfg.PprofAddr, "pprof-addr", envOr("WORKGRAPH_PPROF_ADDR", ""),
		"serve net/http/pprof under /debug/pprof/ on this loopback address, e.g. 127.0.0.1:6060 (env WORKGRAPH_PPROF_ADDR); empty: none")
	f.StringVar(&cfg.PublicURL, "public-url", envOr("WORKGRAPH_PUBLIC_URL", ""),
		"base URL people reach the web UI at, for the links in notifications, e.g. https://workgraph.example.com (env WORKGRAPH_PUBLIC_URL); empty: http://<addr>")
	boolFlag(f, bad, &cfg.Webhooks.AllowPrivate, "webhooks-allow-private", "WORKGRAPH_WEBHOOKS_ALLOW_PRIVATE",
		"let webhooks name and reach loopback, link-local and private addresses (refused by default)")
	durationFlag(f, bad, &cfg.Webhooks.Timeout, "webhooks-timeout", "WORKGRAPH_WEBHOOKS_TIMEOUT",
		"bound of one webhook delivery attempt; a replica killed mid-attempt frees the delivery after twice this plus 1s (0: 10s)")
	intFlag(f, bad, &cfg.Webhooks.Concurrency, "webhooks-concurrency", "WORKGRAPH_WEBHOOKS_CONCURRENCY", "webhook deliveries this replica attempts at once (0: 32)")
	intFlag(f, bad, &cfg.Webhooks.PerWebhook, "webhooks-concurrency-per-webhook", "WORKGRAPH_WEBHOOKS_CONCURRENCY_PER_WEBHOOK",
		"webhook deliveries of one webhook attempted at once over every replica; give every replica the same (0: 16)")
	boolFlag(f, bad, &cfg.Webhooks.Off, "webhooks-off", "WORKGRAPH_WEBHOOKS_OFF", "this replica delivers no webhooks; others still do")
	intFlag(f, bad, &bodyMiB, "body-memory-mib", "WORKGRAPH_BODY_MEMORY_MIB",
		"MiB of request bodies (API and web forms; plan imports have their own bound) this replica reads and holds at once; one more waits up to 2s, then 429 (0: 64; at most 1048576)")
	var maxConns int
	intFlag(f, bad, &maxConns, "max-conns", "WORKGRAPH_MAX_CONNS", "database connections of this replica (0: the URL's pool_max_conns, else 32)")
	cmd.PreRun = func(*cobra.Command, []string) { cfg.MaxConns = int32(maxConns) }
	return cmd
}

// maxBodyMiB bounds --body-memory-mib: 1 TiB, beyond any replica's
// memory; a larger number of MiB could also overflow its count in bytes
// (it wrapped round to a negative count, read as the default, or to an
// arbitrary smaller budget).
const maxBodyMiB = 1 << 20

// checkListenAddr refuses, as a usage error naming the flag (or its
// variable), an address no listener can take for its form: no port, or a
// port out of 0-65535 or unknown. It is checked before anything starts;
// an address well formed but unusable (busy, not this host's) fails when
// it is bound. Empty: nothing to listen on.
func checkListenAddr(fl *pflag.FlagSet, flag, env, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err == nil {
		return nil
	}
	from := "--" + flag
	if !fl.Changed(flag) && os.Getenv(env) != "" {
		from = env
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("%s %q: not an address to listen on (want host:port, the port 0-65535, e.g. 127.0.0.1:8080 or :8080): %v", from, addr, err)}
}

// loggedFailure is err for Main to print, except in the JSON log format:
// there it is logged as one JSON line at error (the "workgraph: ..." text
// line Main prints would be the one line of the stream that is not JSON),
// and the command exits with err's code without printing it again.
func loggedFailure(log *slog.Logger, format string, err error) error {
	if err == nil || format != logs.FormatJSON {
		return err
	}
	log.Error("workgraph serve failed", "err", err.Error())
	code := ExitError
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	return &exitError{code: code}
}
