package cli

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/server"
)

func newServeCmd(stdio IO) *cobra.Command {
	var cfg server.Config
	rateEnv := envOr("WORKGRAPH_RATE_LIMIT", "0")
	rate, rateErr := strconv.ParseFloat(rateEnv, 64)
	var levelName string
	var level slog.Level
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
at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if rateErr != nil && !cmd.Flags().Changed("rate-limit") {
				return fmt.Errorf("WORKGRAPH_RATE_LIMIT=%q is not a number", rateEnv)
			}
			if err := level.UnmarshalText([]byte(levelName)); err != nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("--log-level: %q is not debug, info, warn or error", levelName)}
			}
			cfg.Logger = slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: level}))
			return server.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DatabaseURL, "database-url", envOr("WORKGRAPH_DATABASE_URL", ""), "PostgreSQL URL (env WORKGRAPH_DATABASE_URL); empty starts an embedded cluster")
	f.StringVar(&cfg.ListenDatabaseURL, "listen-database-url", envOr("WORKGRAPH_LISTEN_DATABASE_URL", ""),
		"direct PostgreSQL URL for LISTEN and the migration lock when --database-url goes through PgBouncer in transaction mode (env WORKGRAPH_LISTEN_DATABASE_URL); empty: --database-url")
	f.StringVar(&cfg.DataDir, "data-dir", envOr("WORKGRAPH_DATA_DIR", ""), "directory of the embedded cluster's data (env WORKGRAPH_DATA_DIR)")
	f.StringVar(&cfg.Addr, "addr", envOr("WORKGRAPH_ADDR", "127.0.0.1:8080"), "address to listen on (env WORKGRAPH_ADDR)")
	f.BoolVar(&cfg.Demo, "demo", false, "load the sample project \"demo\" unless it exists (prints a human token to sign in with)")
	f.Float64Var(&cfg.RateLimit, "rate-limit", rate, "requests per second each API token may send (env WORKGRAPH_RATE_LIMIT); 0: the default, negative: unlimited")
	f.StringVar(&levelName, "log-level", envOr("WORKGRAPH_LOG_LEVEL", "info"),
		"debug (also one line per API request), info, warn or error (env WORKGRAPH_LOG_LEVEL)")
	f.StringVar(&cfg.BootstrapToken, "bootstrap-token", envOr("WORKGRAPH_BOOTSTRAP_TOKEN", ""), "make sure an admin token with this secret exists (env WORKGRAPH_BOOTSTRAP_TOKEN)")
	addPolicyFlags(f, &cfg)
	var maxConns int
	intFlag(f, &maxConns, "max-conns", "WORKGRAPH_MAX_CONNS", "database connections of this replica (0: the URL's pool_max_conns, else 32)")
	cmd.PreRun = func(*cobra.Command, []string) { cfg.MaxConns = int32(maxConns) }
	return cmd
}
