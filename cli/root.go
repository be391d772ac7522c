package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/client"
)

// Exit codes. Scripts can tell "nothing to do" and "lease lost" apart from
// other failures; docs/agents.md lists them.
const (
	ExitOK          = 0
	ExitError       = 1   // any other failure (including a supervised command that failed)
	ExitUsage       = 2   // bad flags or arguments, input the server refused as invalid, a lease id and an epoch of different claims
	ExitNothing     = 3   // nothing was ready to claim
	ExitLeaseLost   = 4   // the lease was lost: stop working on the item
	ExitNotFound    = 5   // no such item, project, lease or request (or another project's)
	ExitConflict    = 6   // refused by the current state: cycle, duplicate, conflicting result, ...
	ExitAuth        = 7   // no token, unknown token, or a role that may not do this
	ExitUnavailable = 8   // the server could not be reached, failed, or is rate limiting
	ExitInterrupted = 130 // interrupted by SIGINT or SIGTERM
)

// exitError carries an exit code through cobra. An exitError without err
// exits with its code silently (the command has already said why).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// clientOptions are added to the API client's options (tests: fewer
	// retries against a server that cannot answer).
	clientOptions []client.Option
}

// Main runs the workgraph command line with args (without the program
// name) and returns the process exit code. SIGINT and SIGTERM cancel the
// command's context.
func Main(args []string, stdio IO) int {
	if len(args) > 0 && args[0] == guardArg {
		return runGuard(args[1:], os.Stderr)
	}
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
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code
	}
	// The error may quote what the server answered: written as text.
	fmt.Fprintln(&termSafe{w: stdio.Err}, "workgraph:", err)
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
	root.SetFlagErrorFunc(flagError)
	setVersion(root)
	root.AddCommand(newServeCmd(stdio), newMigrateCmd(stdio))
	for _, add := range extraCommands {
		root.AddCommand(add(stdio))
	}
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group (workgraph, items,
// attention, ...) refuse a word that names none of its subcommands with a
// usage error (exit 2) and the nearest names. Cobra's own behaviour prints
// the group's help and exits 0 under a group, so a script that misspells
// "items shwo" would go on as if it had run. A group given nothing still
// shows its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if len(a) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", a[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(a[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return &exitError{code: ExitUsage, err: fmt.Errorf("%s\n\nRun '%s --help' for its commands", msg, cmd.CommandPath())}
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

// flagError is a usage error (exit 2) for a flag cmd refused: a misspelt
// flag names the flags of cmd it may have meant, and where they are all
// listed, as a misspelt command does.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) && ive.GetFlag() != nil {
		msg = invalidFlagValue(ive.GetFlag(), ive.GetValue(), msg)
	}
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := flagSuggestions(cmd, name); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t--" + strings.Join(s, "\n\t--")
		}
	}
	if ive != nil || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag") {
		msg += fmt.Sprintf("\n\nRun '%s --help' for its flags", cmd.CommandPath())
	}
	return &exitError{code: ExitUsage, err: errors.New(msg)}
}

// invalidFlagValue says what a flag of fl's type takes, instead of the
// parser's words (`strconv.ParseInt: parsing "x": invalid syntax`, `time:
// missing unit in duration "5"`); pflagMsg for a type it does not know.
func invalidFlagValue(fl *pflag.Flag, value, pflagMsg string) string {
	var want string
	switch fl.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "count":
		want = "a whole number, e.g. --" + fl.Name + " 5"
	case "float32", "float64":
		want = "a number, e.g. --" + fl.Name + " 0.5"
	case "duration":
		want = "a duration with its unit, e.g. --" + fl.Name + " 30s (units: ms, s, m, h; 1m30s)"
	case "bool":
		want = "true or false (--" + fl.Name + " alone is true)"
	default:
		return pflagMsg
	}
	return fmt.Sprintf("--%s %q: want %s", fl.Name, value, want)
}

// flagSuggestions are the names of cmd's flags that start with name or are
// within two edits of it (cobra suggests commands so, not flags), nearest
// first.
func flagSuggestions(cmd *cobra.Command, name string) []string {
	type near struct {
		name string
		dist int
	}
	var found []near
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) {
			d = 0
		}
		if !f.Hidden && d <= 2 {
			found = append(found, near{f.Name, d})
		}
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].dist < found[j].dist })
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = n.name
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes (flag
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// extraCommands lets other files of this package register commands.
var extraCommands []func(IO) *cobra.Command

func logger(w io.Writer) *slog.Logger { return leveledLogger(w, slog.LevelInfo) }

// leveledLogger is logger writing level and above.
func leveledLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
