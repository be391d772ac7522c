package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/telemetry"
)

// session is what a client command runs with: its configuration, the API
// client and where to write.
type session struct {
	// IO writes the command's output and messages through termSafe; raw
	// is the process's own, for the output of the command `workgraph
	// work` runs, which is passed on as it is.
	IO
	raw  IO
	cfg  *clientConfig
	api  *client.Client
	json bool
	cmd  *cobra.Command
}

// flagChanged reports whether the flag was given on the command line.
func (s *session) flagChanged(name string) bool { return s.cmd.Flags().Changed(name) }

// runClient adapts a client command's body to cobra: it resolves the
// configuration, builds the client and turns the body's error into an
// exit code and a message that says what to do next.
func runClient(stdio IO, f *clientFlags, fn func(ctx context.Context, s *session, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := negativeDuration(cmd); err != nil {
			return err
		}
		cfg, err := loadConfig(*f, os.Getenv)
		if err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		api, err := cfg.newClient(stdio)
		if err != nil {
			return err
		}
		s := &session{IO: stdio.safe(), raw: stdio, cfg: cfg, api: api, json: f.json, cmd: cmd}
		// A command run by `workgraph work` (or any tool passing W3C trace
		// context in TRACEPARENT) sends its calls in that trace.
		ctx := telemetry.FromEnv(cmd.Context(), os.Getenv)
		err = fn(ctx, s, args)
		if missingProject(err) {
			return s.explainMissingProject(ctx, err)
		}
		return explain(err, cfg)
	}
}

// negativeDuration refuses a negative duration flag (--lease -5m, --wait
// -1s): the requests would otherwise take it as "not given" and claim or
// wait with the default instead of what was asked.
// A negative --limit (a page size) is refused alike: it was taken as "not
// given", and a whole default page came back.
func negativeDuration(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		switch {
		case err != nil:
		case fl.Value.Type() == "duration":
			if d, perr := time.ParseDuration(fl.Value.String()); perr == nil && d < 0 {
				err = usageError("--%s %s: a duration must not be negative", fl.Name, fl.Value.String())
			}
		case fl.Name == "limit" && fl.Value.Type() == "int":
			if n, perr := strconv.Atoi(fl.Value.String()); perr == nil && n < 0 {
				err = usageError("--limit %d: a page size must not be negative (leave --limit out for the server's default)", n)
			}
		}
	})
	return err
}

// refuseBlankFilters makes cmd refuse (exit 2) any of the named filter
// flags given with an empty or blank value (--worker "$UNSET"): the client
// sends nothing for it, so the list would be unfiltered, the opposite of
// what was asked (the server refuses ?worker= for the same reason).
func refuseBlankFilters(cmd *cobra.Command, names ...string) {
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, n := range names {
			if f := cmd.Flags().Lookup(n); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
				return usageError("--%s %q: an empty filter would match everything; give a value, or leave --%s out", n, f.Value.String(), n)
			}
		}
		return nil
	}
}

// usageError is an exit-2 error for bad arguments.
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// args wraps a cobra argument check so that its failures exit with
// ExitUsage and say what the command takes, from its usage line ("items
// show: missing ID"), where cobra says "accepts 1 arg(s), received 0" (or,
// for a command that takes none, "unknown command").
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			return &exitError{code: ExitUsage, err: fmt.Errorf("%s: %s\nusage: %s (see `%s --help`)",
				path, argsWanted(cmd, a, err), strings.TrimSuffix(cmd.UseLine(), " [flags]"), cmd.CommandPath())}
		}
		return nil
	}
}

// argsWanted says how the arguments a differ from what cmd's usage line
// names: the required ones missing, or how many it takes. A check the
// usage line does not explain keeps its own words (err).
func argsWanted(cmd *cobra.Command, a []string, err error) string {
	required, names, variadic := usageArgs(cmd.Use)
	switch {
	case len(a) < len(required):
		return "missing " + strings.Join(required[len(a):], " ")
	case len(names) == 0:
		return fmt.Sprintf("takes no arguments, got %d", len(a))
	case !variadic && len(a) > len(names):
		takes, noun := "takes", "arguments"
		if len(names) > len(required) {
			takes = "takes at most"
		}
		if len(names) == 1 {
			noun = "argument"
		}
		return fmt.Sprintf("%s %d %s (%s), got %d", takes, len(names), noun, strings.Join(names, " "), len(a))
	}
	return err.Error()
}

// usageArgs reads the positional arguments of a cobra usage line ("resolve
// ID [ANSWER]", "create [NAME] --role admin|human|agent [--project
// NAME|ID]", "work [flags] -- COMMAND [ARGS...]"): the required ones, all
// of them (optional ones in brackets) and whether the last takes many.
// Flags, their values, "[flags]" and "--" are not arguments.
func usageArgs(use string) (required, names []string, variadic bool) {
	fields := strings.Fields(use)
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "["):
			group := f
			for !strings.HasSuffix(fields[i], "]") && i+1 < len(fields) {
				i++
				group += " " + fields[i]
			}
			inner := strings.TrimSuffix(strings.TrimPrefix(group, "["), "]")
			if strings.HasPrefix(inner, "-") || inner == "flags" {
				continue
			}
			names = append(names, group)
			variadic = variadic || strings.HasSuffix(inner, "...")
		case f == "--":
		case strings.HasPrefix(f, "-"):
			i++ // a flag and its value
		default:
			required = append(required, f)
			names = append(names, f)
			variadic = variadic || strings.HasSuffix(f, "...")
		}
	}
	return required, names, variadic
}

// Hints that say what to do next, by problem code.
const (
	hintClaimAgain = "; stop working on this item and claim again (`workgraph claim`)"
	hintWait       = "try again later, or wait for work with --wait 30s"
	hintNothing    = "nothing is ready to claim; " + hintWait
)

// leaseLostHint says what happened to a lost lease, from the outcome the
// server gives (the lease's end), and what to do next.
func leaseLostHint(e *client.Error) string {
	if epochMismatch(e) {
		return mismatchHint(e)
	}
	return outcomeHint(lostOutcome(e))
}

// epochMismatch reports whether a lease_lost refused an epoch the lease was
// not granted at. A lease keeps the epoch of its claim (the item's next
// claim is a new lease), so the lease id and the epoch are of different
// claims: nothing was changed, and the lease itself may be live and the
// caller's. That is the caller's input, not a lost lease.
func epochMismatch(e *client.Error) bool {
	var outcome string
	e.Extension("outcome", &outcome)
	return e.Code == client.CodeLeaseLost && outcome == "" && strings.Contains(e.Detail, "not granted at this epoch")
}

// mismatchHint is what to do about an epochMismatch: pass the claim's epoch.
func mismatchHint(e *client.Error) string {
	return fmt.Sprintf("the lease was not granted at %s: the lease id and the epoch are of different claims "+
		"(--lease-id/WORKGRAPH_LEASE_ID and --epoch/WORKGRAPH_EPOCH); nothing was changed, and the lease, if live, is still its holder's. "+
		"Pass the epoch the lease's claim printed", mismatchEpoch(e))
}

// mismatchEpoch names the epoch an epochMismatch refused.
func mismatchEpoch(e *client.Error) string {
	var n int64
	if e.Extension("epoch", &n) {
		return fmt.Sprintf("epoch %d", n)
	}
	return "this epoch"
}

// lostOutcome is the end of the lease a lease_lost names ("" when
// unknown).
func lostOutcome(e *client.Error) string {
	var outcome string
	e.Extension("outcome", &outcome)
	if outcome == "" && strings.Contains(e.Detail, "has expired") {
		outcome = string(client.OutcomeExpired)
	}
	return outcome
}

// outcomeHint says what the end of a lost lease (its outcome; "" when
// unknown) means for its worker (leaseEnd), and what to do next.
func outcomeHint(outcome string) string {
	switch outcome {
	case string(client.OutcomeCancelled):
		return leaseEnd(outcome) + "; stop working on it"
	case string(client.OutcomeExpired):
		return leaseEnd(outcome) + ", who sees this late report" + hintClaimAgain
	}
	return leaseEnd(outcome) + hintClaimAgain
}

// leaseEnd says what the end of a lost lease (its outcome; "" when
// unknown) means for the item, without telling anyone to act: the words
// of `workgraph work`, which stops the command and goes on by itself.
func leaseEnd(outcome string) string {
	switch outcome {
	case "":
		return "the lease was taken over or expired"
	case string(client.OutcomeCancelled):
		return "the item was cancelled (by a person or an admin); it will not be offered again"
	case string(client.OutcomeExpired):
		return "the lease expired (no heartbeat in time): the item may be claimed by another worker, or (on_expiry reconcile) it waits for a person's decision"
	}
	return fmt.Sprintf("the lease has already ended (%s)", strings.ReplaceAll(outcome, "_", " "))
}

// supervisedLostHint is leaseEnd for a lease_lost refusal of a call
// `workgraph work` made itself. A mismatched epoch there is not the
// caller's mistake (the supervisor sends its claim's epoch): it is said as
// the server's, and the lease, which nobody can renew, runs out.
func supervisedLostHint(e *client.Error) string {
	if epochMismatch(e) {
		return fmt.Sprintf("the server refused the epoch this lease's claim answered (%s) as one it was not granted at; "+
			"nothing was changed, and the lease runs out by itself", mismatchEpoch(e))
	}
	return leaseEnd(lostOutcome(e))
}

// explain maps err to an exit code and adds what to do next.
func explain(err error, cfg *clientConfig) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, client.ErrNothingReady) {
		return &exitError{code: ExitNothing, err: fmt.Errorf("project %q: %s", cfg.Project, hintNothing)}
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		code, hint := hintFor(ae, cfg)
		var own *hinted
		if errors.As(err, &own) {
			hint = own.hint
		}
		msg := ae.Detail
		if msg == "" {
			msg = ae.Title
		}
		if field := ""; ae.Extension("field", &field) && field != "" && !strings.Contains(msg, field) {
			msg = field + ": " + msg
		}
		if id := ae.RequestID(); id != "" && ae.Status >= 500 {
			hint += " (request id " + id + ")"
		}
		return &exitError{code: code, err: fmt.Errorf("%s (%s)\n  %s", msg, ae.Code, hint)}
	}
	if errors.Is(err, context.Canceled) {
		return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
	}
	if client.Unreachable(err) {
		return &exitError{code: ExitUnavailable, err: fmt.Errorf("cannot reach the server at %s (from %s): %s\n  is it running? start one with `workgraph serve`, or point --url / WORKGRAPH_URL at it",
			cfg.URL, cfg.Source["url"], transportReason(err))}
	}
	return err
}

// hinted is a problem with its command's own hint, which explain gives in
// place of the code's general one (which would mislead for that command).
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// withHint gives err the hint when it is a problem with code (and, for a
// conflict, not one of a stale --version, where retrying does help).
func withHint(err error, code, hint string) error {
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != code || (code == client.CodeConflict && versionConflict(ae)) {
		return err
	}
	return &hinted{err: err, hint: hint}
}

// versionConflict reports whether e refused a stale version (the object
// changed meanwhile), the one conflict that a retry can mend.
func versionConflict(e *client.Error) bool {
	var field string
	return e.Extension("field", &field) && field == "version"
}

func hintFor(e *client.Error, cfg *clientConfig) (int, string) {
	switch e.Code {
	case client.CodeLeaseLost:
		if epochMismatch(e) {
			// The caller's lease id and epoch do not go together: its
			// input, refused without a change (the lease may be live).
			return ExitUsage, mismatchHint(e)
		}
		return ExitLeaseLost, leaseLostHint(e)
	case client.CodeUnauthenticated:
		return ExitAuth, fmt.Sprintf("the server does not accept this token (unknown or revoked); check the token (from %s)", cfg.Source["token"])
	case client.CodeForbidden:
		if strings.HasPrefix(e.Detail, "a human token may not") {
			// Telling a human token to use a human token would send its
			// holder in a circle.
			return ExitAuth, "this needs an admin token: a human token works in its own project; projects, tokens, every project's events (--all) and a project's settings are an admin's"
		}
		return ExitAuth, "this token's role may not do that: answering attention requests and cancelling need a human or admin token; projects and tokens are admin-only"
	case client.CodeNotFound:
		return ExitNotFound, fmt.Sprintf("check the id and the project (now %q, from %s): another project's objects answer not found", cfg.Project, cfg.Source["project"])
	case client.CodeAlreadyExists:
		return ExitConflict, "it exists already; use the existing one or pick another name"
	case client.CodeConflictingResult:
		return ExitConflict, "the item was already completed with a different result; the first result stands and this one was recorded as a late report"
	case client.CodeBlocked:
		return ExitConflict, "nothing was recorded and the lease is still yours: the item now waits for the work named above (added while you held it); complete it once that work is done, or give it back (`workgraph release`)"
	case client.CodeDependencyCycle:
		return ExitConflict, "the edge would close a cycle in the waits-for graph (an item waits for its dependencies, a parent for its children); remove an edge of the cycle first"
	case client.CodeConflict:
		if versionConflict(e) {
			return ExitConflict, "it changed meanwhile; show it again and retry against its new version"
		}
		// Mostly a state that refuses the change (done, cancelled,
		// ended), which the same request meets again; a few say above
		// that they changed meanwhile and may be sent again.
		return ExitConflict, "show it to see where it stands: a state named above (done, cancelled, ended) refuses the same request again; send it again only if the message says it changed meanwhile"
	case client.CodeDepthLimit:
		return ExitConflict, "a budget over the parent limits how deep items may be created below its item; create the item higher up, or raise the budget's --max-depth (workgraph items budget)"
	case client.CodeNoMatch:
		return ExitConflict, "every ready item requires a capability this claim does not offer, so waiting will not help; claim with the missing capabilities (--capabilities), or change the items' requires"
	case client.CodeTooManyOpenRequests:
		return ExitConflict, "this lease already has as many unanswered questions as it may; keep working and heartbeating until a person answers one (workgraph heartbeat prints the answers), or ask without --non-blocking (a blocking question ends the lease)"
	case client.CodeInvalidArgument:
		return ExitUsage, "fix the input named above and retry"
	case client.CodePayloadTooLarge:
		return ExitUsage, "the request is larger than the server accepts (about 1 MiB); store big results elsewhere and send a reference"
	case client.CodeHeaderTooLarge:
		return ExitUsage, fmt.Sprintf("the request's headers are larger than the server reads (%d KiB): shorten what made them long "+
			"(a very long --label or other query value, a large header in the environment's proxy settings)", server.MaxHeaderBytes>>10)
	case client.CodeRateLimited:
		// The detail above says which limit: this token's rate, this
		// address's requests without valid credentials, or the replica's
		// budget of request bodies read at once.
		return ExitUnavailable, "the server is rate limiting (the message above says which limit); slow down and retry in a moment"
	case client.CodeUnavailable, client.CodeRequestInProgress:
		return ExitUnavailable, "the server is unavailable; retry in a moment"
	case client.CodeEventsPruned:
		return ExitConflict, fmt.Sprintf("the events after that position were deleted by the server's retention; resume with --after %s to read what is kept (the rest is gone), or leave --after out", e.Extensions["pruned_through"])
	case client.CodeOutcomeUnknown:
		return ExitConflict, "the request took effect but its answer was lost (the server stopped); show the state it changed before sending it again"
	}
	return ExitError, "the server failed; retry, and look at the server's log if it persists"
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tabwriter for aligned columns; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

func deref(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// missingProject reports whether err is the server's answer that the
// configured project does not exist (or the token may not see it).
func missingProject(err error) bool {
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != client.CodeNotFound {
		return false
	}
	var field string
	ae.Extension("field", &field)
	return field == "project"
}

// explainMissingProject turns the server's "project not found" into what a
// person needs: which project was asked for and where that came from, the
// projects this token can see, and the three ways to pick one.
func (s *session) explainMissingProject(ctx context.Context, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "project %q not found (from %s)", s.cfg.Project, s.cfg.Source["project"])
	ps, lerr := s.api.ListProjects(ctx)
	switch {
	case lerr != nil:
		fmt.Fprintf(&b, "\n  the projects this token can see could not be listed: %v", lerr)
	case len(ps) == 0:
		b.WriteString("\n  this token sees no project; an admin creates one with `workgraph projects create NAME`")
	default:
		b.WriteString("\n  projects this token can see:")
		for _, p := range ps {
			fmt.Fprintf(&b, " %s", p.Name)
		}
		fmt.Fprintf(&b, "\n  pick one with --project %s, WORKGRAPH_PROJECT=%s, or `project: %s` in %s",
			ps[0].Name, ps[0].Name, ps[0].Name, configHint(s.cfg))
	}
	return &exitError{code: ExitNotFound, err: errors.New(b.String())}
}
