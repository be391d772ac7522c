package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/db/embedpg"
)

func init() { extraCommands = append(extraCommands, newDBCmd) }

func newDBCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db status|stop",
		Short: "Inspect or stop the embedded PostgreSQL of a data folder",
		Long: `Inspect or stop the embedded PostgreSQL that ` + "`workgraph serve`" + ` runs when no
database URL is given.

One workgraph process owns a data folder at a time: it holds an OS lock on
<data dir>/owner.lock for its whole life and stops the database when it exits.
A database left running by an owner that was killed (kill -9, a crash) is
adopted by the next ` + "`workgraph serve`" + ` on that folder, or stopped by
` + "`workgraph db stop`" + `.

The data folder is --data-dir, else WORKGRAPH_DATA_DIR, else the default
($XDG_DATA_HOME/workgraph/pg, ~/.local/share/workgraph/pg; as root
/var/lib/workgraph/pg), as for ` + "`workgraph serve`" + `.`,
		Args: args(cobra.NoArgs),
		// Without a subcommand: the help; an unknown one is a usage error.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDBStatusCmd(stdio), newDBStopCmd(stdio))
	return cmd
}

// addDataDirFlag mirrors serve's --data-dir.
func addDataDirFlag(cmd *cobra.Command, dataDir *string) {
	cmd.Flags().StringVar(dataDir, "data-dir", envOr(embedpg.EnvDataDir, ""), "directory of the embedded cluster's data (env WORKGRAPH_DATA_DIR)")
}

func newDBStatusCmd(stdio IO) *cobra.Command {
	var dataDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the embedded PostgreSQL of the data folder runs, and who owns it",
		Long: `Show the embedded PostgreSQL of the data folder (--data-dir, env
WORKGRAPH_DATA_DIR): whether it runs and its pid, the pid of the workgraph
process that owns it (none: it was left behind, see ` + "`workgraph db stop`" + `),
its socket and data directories, PostgreSQL version and size on disk. It
changes nothing and exits 0 whether or not the database runs.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := embedpg.Inspect(cmd.Context(), embedpg.Config{DataDir: dataDir})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdio.Out, st)
			}
			t := newTable(stdio.Out)
			state := "not running"
			switch {
			case st.Running && st.Owned:
				state = "running"
			case st.Running:
				state = "running, left behind (no live owner; `workgraph db stop` stops it, the next `workgraph serve` adopts it)"
			case !st.Initialized:
				state = "not created yet"
			}
			fmt.Fprintf(t, "state\t%s\n", state)
			fmt.Fprintf(t, "pid\t%s\n", pidOrDash(st.PID))
			owner := "-"
			if st.Owned {
				owner = "workgraph, pid " + pidOrDash(st.OwnerPID)
			}
			fmt.Fprintf(t, "owner\t%s\n", owner)
			fmt.Fprintf(t, "data dir\t%s\n", st.DataDir)
			fmt.Fprintf(t, "socket dir\t%s\n", st.SocketDir)
			fmt.Fprintf(t, "log\t%s\n", st.LogFile)
			version := orDash(st.Version)
			if st.ServerVersion != "" {
				version = st.ServerVersion
			}
			fmt.Fprintf(t, "version\t%s\n", version)
			fmt.Fprintf(t, "size\t%s\n", byteSize(st.SizeBytes))
			return t.Flush()
		},
	}
	addDataDirFlag(cmd, &dataDir)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func newDBStopCmd(stdio IO) *cobra.Command {
	var dataDir string
	var force bool
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the embedded PostgreSQL of the data folder, left behind by a dead owner",
		Long: `Stop the embedded PostgreSQL of the data folder (--data-dir, env
WORKGRAPH_DATA_DIR) that no live workgraph process owns, as one left running
after ` + "`workgraph serve`" + ` was killed. Sessions are disconnected and the data
is flushed and kept; the next ` + "`workgraph serve`" + ` starts it again.

While a workgraph process owns the folder, it refuses (exit 6) and names that
process: stop it instead (Ctrl-C or kill <pid>; it stops its database on
exit). --force stops the database under it anyway: that server then fails
its requests until it is restarted. Exits 0 also when nothing was running.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopped, err := embedpg.StopLeftover(cmd.Context(), embedpg.Config{DataDir: dataDir, Logger: logger(stdio.Err)}, force)
			var owned *embedpg.OwnedError
			if errors.As(err, &owned) {
				return &exitError{code: ExitConflict, err: fmt.Errorf("not stopping: %w; or pass --force to stop the database under it", err)}
			}
			if err != nil {
				return err
			}
			st, _ := embedpg.Inspect(cmd.Context(), embedpg.Config{DataDir: dataDir})
			if stopped {
				fmt.Fprintf(stdio.Out, "stopped the embedded PostgreSQL in %s\n", st.DataDir)
			} else {
				fmt.Fprintf(stdio.Out, "the embedded PostgreSQL in %s is not running\n", st.DataDir)
			}
			return nil
		},
	}
	addDataDirFlag(cmd, &dataDir)
	cmd.Flags().BoolVar(&force, "force", false, "stop it even while a live workgraph process owns it")
	return cmd
}

func pidOrDash(pid int) string {
	if pid <= 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}
