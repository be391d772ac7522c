package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/embedpg"
)

func newMigrateCmd(stdio IO) *cobra.Command {
	var url, dataDir string
	cmd := &cobra.Command{
		Use:       "migrate up|down|status",
		Short:     "Apply, roll back or list database migrations",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "status"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPool(cmd.Context(), url, dataDir, func(pool *pgxpool.Pool) error {
				switch args[0] {
				case "up":
					// An operator's run names each migration it applies.
					return db.Migrate(cmd.Context(), pool, leveledLogger(stdio.Err, slog.LevelDebug))
				case "down":
					return db.MigrateDown(cmd.Context(), pool)
				case "status":
					return db.MigrationStatus(cmd.Context(), pool, stdio.Out)
				}
				return &exitError{code: ExitUsage, err: fmt.Errorf("migrate: unknown action %q (want up, down or status)", args[0])}
			})
		},
	}
	addDatabaseFlags(cmd, &url, &dataDir)
	return cmd
}

func addDatabaseFlags(cmd *cobra.Command, url, dataDir *string) {
	cmd.Flags().StringVar(url, "database-url", envOr("WORKGRAPH_DATABASE_URL", ""), "PostgreSQL URL (env WORKGRAPH_DATABASE_URL); empty uses the embedded cluster")
	cmd.Flags().StringVar(dataDir, "data-dir", envOr("WORKGRAPH_DATA_DIR", ""), "directory of the embedded cluster's data (env WORKGRAPH_DATA_DIR)")
}

// withPool opens the database the server would use and runs fn. Without a
// URL it uses the embedded cluster: that of the running server that owns
// the data folder, else it owns the folder for the duration of fn (starting
// or adopting the cluster, and stopping it after).
func withPool(ctx context.Context, url, dataDir string, fn func(*pgxpool.Pool) error) error {
	return withPoolAt(ctx, url, dataDir, func(pool *pgxpool.Pool, _ string) error { return fn(pool) })
}

// withPoolAt is withPool that also tells fn which database it opened, in
// words for a message ("the embedded cluster in DIR", "the database of
// --database-url"), so that a command that finds nothing there can say
// where it looked.
func withPoolAt(ctx context.Context, url, dataDir string, fn func(pool *pgxpool.Pool, where string) error) error {
	where := "the database of --database-url (env WORKGRAPH_DATABASE_URL)"
	if url == "" {
		cluster, err := embedpg.Start(ctx, embedpg.Config{DataDir: dataDir, Database: "workgraph", Own: true, JoinOwner: true})
		if err != nil {
			return err
		}
		defer cluster.Stop(context.WithoutCancel(ctx))
		url = cluster.URL("workgraph")
		where = "the embedded cluster in " + cluster.DataDir()
	}
	pool, err := db.Open(ctx, url, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool, where)
}
