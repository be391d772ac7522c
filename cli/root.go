package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes. Scripts can tell "nothing to do" and "lease lost" apart from
// other failures.
const (
	ExitOK         = 0
	ExitError      = 1
	ExitUsage      = 2
	ExitNothing    = 3 // nothing was ready to claim
	ExitLeaseLost  = 4 // the lease was lost: stop working on the item
	ExitNotFound   = 5
	ExitConflict   = 6
	ExitAuth       = 7
	ExitUnavailble = 8
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs the workgraph command line with args (without the program
// name) and returns the process exit code. SIGINT and SIGTERM cancel the
// command's context.
func Main(args []string, stdio IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdio)
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stdio.Err, "workgraph:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitError
}

func newRoot(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "workgraph",
		Short:         "A PostgreSQL-backed work graph with fenced leases for AI agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(stdio), newMigrateCmd(stdio))
	for _, add := range extraCommands {
		root.AddCommand(add(stdio))
	}
	return root
}

// extraCommands lets other files of this package register commands.
var extraCommands []func(IO) *cobra.Command

func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
