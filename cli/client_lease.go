package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/fence"
)

// Environment variables a supervised command (and `workgraph ask`, ...)
// reads its lease from. `workgraph work` sets them; `claim --env` prints them.
const (
	envLeaseID     = "WORKGRAPH_LEASE_ID"
	envEpoch       = "WORKGRAPH_EPOCH"
	envItemID      = "WORKGRAPH_ITEM_ID"
	envItemTitle   = "WORKGRAPH_ITEM_TITLE"
	envItemBody    = "WORKGRAPH_ITEM_BODY"
	envItemFile    = "WORKGRAPH_ITEM_FILE"
	envResultFile  = "WORKGRAPH_RESULT_FILE"
	envStateDir    = "WORKGRAPH_STATE_DIR"
	envAnswersFile = "WORKGRAPH_ANSWERS_FILE"
)

// attentionFile is the control file `workgraph ask` writes into
// WORKGRAPH_STATE_DIR after a blocking request ended the lease, so that the
// supervisor stops quietly instead of failing the item.
const attentionFile = "attention.json"

func init() {
	extraCommands = append(extraCommands,
		newClaimCmd, newHeartbeatCmd, newCompleteCmd, newReleaseCmd, newFailCmd, newDecomposeCmd, newAskCmd)
}

// leaseFlags are the fence every worker mutation presents.
type leaseFlags struct {
	id, epoch string
}

func addLeaseFlags(cmd *cobra.Command, lf *leaseFlags) {
	cmd.Flags().StringVar(&lf.id, "lease-id", "", "lease id (env "+envLeaseID+")")
	cmd.Flags().StringVar(&lf.epoch, "epoch", "", "lease epoch, the fencing token (env "+envEpoch+")")
}

// fence returns the lease id and epoch from the flags or the environment.
func (lf *leaseFlags) fence() (string, int64, error) {
	id, ep := lf.id, lf.epoch
	if id == "" {
		id = os.Getenv(envLeaseID)
	}
	if ep == "" {
		ep = os.Getenv(envEpoch)
	}
	if id == "" || ep == "" {
		return "", 0, usageError("no lease: pass --lease-id and --epoch (the claim printed them), set %s and %s (eval \"$(workgraph claim --env)\" claims and sets them), or run inside `workgraph work`, which sets them", envLeaseID, envEpoch)
	}
	epoch, err := strconv.ParseInt(ep, 10, 64)
	if err != nil || epoch < 1 {
		return "", 0, usageError("epoch %q: want a positive integer (the epoch the claim returned)", ep)
	}
	return id, epoch, nil
}

// leaseCommand completes cmd as a worker call on the current lease: it
// registers the connection flags and --lease-id/--epoch, and runs run with
// the fence those (or the environment) give.
func leaseCommand(stdio IO, cmd *cobra.Command, run func(ctx context.Context, s *session, args []string, leaseID string, epoch int64) error) *cobra.Command {
	var (
		f  clientFlags
		lf leaseFlags
	)
	cmd.RunE = runClient(stdio, &f, func(ctx context.Context, s *session, args []string) error {
		id, epoch, err := lf.fence()
		if err != nil {
			return err
		}
		if id, err = s.resolveID(ctx, kindLease, id); err != nil {
			return err
		}
		return run(ctx, s, args, id, epoch)
	})
	addClientFlags(cmd, &f)
	addLeaseFlags(cmd, &lf)
	return cmd
}

func newClaimCmd(stdio IO) *cobra.Command {
	var (
		f      clientFlags
		worker string
		ttl    time.Duration
		wait   time.Duration
		labels []string
		caps   []string
		env    bool
		max    int
	)
	cmd := &cobra.Command{
		Use:   "claim",
		Short: "Claim the next ready item (exit 3 when nothing is ready)",
		Long: `Claim the highest-priority ready item of the project and print the lease.

Every later call about the item presents the lease id and epoch:
  eval "$(workgraph claim --env)"     # sets WORKGRAPH_LEASE_ID, WORKGRAPH_EPOCH, WORKGRAPH_FENCE, ...
  workgraph heartbeat                  # every third of the lease
  workgraph complete --result '{"summary": "done"}'

With --max N (up to 100) the claim grants up to N items in one call and
prints each lease (with --json, a JSON array of claims).

Exit status 3 means nothing was ready (after waiting --wait).`,
		Args: args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			if worker == "" {
				worker = s.cfg.Worker
			}
			if max < 1 || max > client.MaxBatch {
				return usageError("--max %d: want 1 to %d", max, client.MaxBatch)
			}
			if max > 1 {
				if env {
					return usageError("--env names one lease; it cannot be given with --max")
				}
				req := client.ClaimRequest{Worker: worker, LeaseSeconds: seconds(ttl), Labels: labels, Capabilities: caps}
				cs, err := claimBatchWaiting(ctx, s.api, s.cfg.Project, req, max, wait)
				if errors.Is(err, client.ErrNothingReady) {
					return nothingReady(ctx, s, req, wait)
				}
				if err != nil {
					return err
				}
				if s.json {
					return printJSON(s.Out, cs)
				}
				for i := range cs {
					printClaim(s.Out, &cs[i])
				}
				return nil
			}
			req := client.ClaimRequest{Worker: worker, LeaseSeconds: seconds(ttl), Labels: labels, Capabilities: caps}
			cl, err := claimWaiting(ctx, s.api, s.cfg.Project, req, wait)
			if errors.Is(err, client.ErrNothingReady) {
				return nothingReady(ctx, s, req, wait)
			}
			if err != nil {
				return err
			}
			switch {
			case s.json:
				return printJSON(s.Out, cl)
			case env:
				printClaimEnv(s.Out, cl, s.cfg.URL)
				return nil
			}
			printClaim(s.Out, cl)
			return nil
		}),
	}
	addClientFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&worker, "worker", "", "worker label (env WORKGRAPH_WORKER; default the host name)")
	fl.DurationVar(&ttl, "lease", 0, "lease time to live, e.g. 5m (default: the server's, 15m)")
	fl.DurationVar(&wait, "wait", 0, "wait up to this long for an item to become ready, e.g. 30s")
	fl.StringSliceVar(&labels, "labels", nil, "only items carrying all these labels (comma-separated)")
	fl.StringSliceVar(&caps, "capabilities", nil, "what this worker can do: only items requiring no more are handed out (comma-separated)")
	fl.BoolVar(&env, "env", false, "print shell assignments (export WORKGRAPH_LEASE_ID=...) for eval")
	fl.IntVar(&max, "max", 1, "claim up to this many items in one call (1..100)")
	return cmd
}

// claimBatchWaiting is claimWaiting for a batch of up to n items: it
// answers as soon as at least one is granted.
func claimBatchWaiting(ctx context.Context, api *client.Client, project string, req client.ClaimRequest, n int, wait time.Duration) ([]client.Claim, error) {
	deadline := time.Now().Add(wait)
	for {
		req.WaitSeconds = seconds(min(time.Until(deadline), maxWaitPerCall))
		cs, err := api.ClaimBatch(ctx, project, req, n)
		if !errors.Is(err, client.ErrNothingReady) || time.Until(deadline) < time.Second {
			return cs, err
		}
	}
}

// maxWaitPerCall bounds one long poll; longer waits are several calls.
const maxWaitPerCall = 30 * time.Second

// claimWaiting claims, long-polling up to wait in calls of at most
// maxWaitPerCall. Nothing ready by then: client.ErrNothingReady.
func claimWaiting(ctx context.Context, api *client.Client, project string, req client.ClaimRequest, wait time.Duration) (*client.Claim, error) {
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		req.WaitSeconds = seconds(min(left, maxWaitPerCall))
		cl, err := api.Claim(ctx, project, req)
		if !errors.Is(err, client.ErrNothingReady) || time.Until(deadline) < time.Second {
			return cl, err
		}
	}
}

// seconds rounds d up to whole seconds (0 stays 0).
func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func printClaim(w io.Writer, cl *client.Claim) {
	fmt.Fprintf(w, "claimed item %s: %s\n", cl.Item.ID, cl.Item.Title)
	t := newTable(w)
	fmt.Fprintf(t, "  lease\t%s\n  epoch\t%d\n  worker\t%s\n  expires\t%s\n", cl.Lease.ID, cl.Lease.Epoch, cl.Lease.Worker, fmtTime(cl.Lease.ExpiresAt))
	if cl.FenceToken != "" {
		// What the agent hands the systems it writes to (docs/agents.md,
		// "Fencing your effects"); alone on its line, easy to copy.
		fmt.Fprintf(t, "  fence\t%s\n", cl.FenceToken)
	}
	t.Flush()
	if strings.TrimSpace(cl.Item.Body) != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(cl.Item.Body, "\n"))
	}
	if cl.OlderAttention {
		fmt.Fprintf(w, "\nolder questions than these %d were asked about this item: workgraph attention ls --item %s --state resolved\n",
			len(cl.Attention), cl.Item.ID)
	}
	for _, a := range cl.Attention {
		fmt.Fprintf(w, "\nearlier question (%s): %s\n  answer: %s\n", a.State, a.Question, deref(a.Answer, "(none yet)"))
	}
	flags := fmt.Sprintf("--lease-id %s --epoch %d", cl.Lease.ID, cl.Lease.Epoch)
	export := fmt.Sprintf("export %s=%s %s=%d", envLeaseID, cl.Lease.ID, envEpoch, cl.Lease.Epoch)
	if cl.FenceToken != "" {
		export += " " + fence.EnvToken + "=" + cl.FenceToken
	}
	fmt.Fprintf(w, "\nnext: heartbeat within the lease (every third of it), then complete:\n"+
		"  workgraph heartbeat %s\n"+
		"  workgraph complete %s --result '{\"summary\": \"...\"}'\n"+
		"or give this shell the lease, and leave the flags out:\n"+
		"  %s\n", flags, flags, export)
}

// printClaimEnv prints the shell assignments of a claim: the lease, the
// item and the fence variables `workgraph work` hands its command too.
// printHeartbeat writes a renewal: the new expiry and the answers it
// carries (the lease's newest ones; when it has older ones, how to list
// them).
func printHeartbeat(w io.Writer, id string, hb *client.Heartbeat) {
	fmt.Fprintf(w, "lease %s extended until %s\n", id, fmtTime(hb.ExpiresAt))
	if hb.OlderAnswers {
		fmt.Fprintf(w, "older answers than these %d were given to this lease's questions: workgraph attention ls --item %s --state resolved\n",
			len(hb.Answers), hb.Lease.ItemID)
	}
	for _, a := range hb.Answers {
		fmt.Fprintf(w, "answer to %q: %s\n", a.Question, deref(a.Answer, ""))
	}
}

func printClaimEnv(w io.Writer, cl *client.Claim, serverURL string) {
	vars := [][2]string{
		{envLeaseID, cl.Lease.ID},
		{envEpoch, strconv.FormatInt(cl.Lease.Epoch, 10)},
		{envItemID, cl.Item.ID},
		{envItemTitle, cl.Item.Title},
		{envItemBody, cl.Item.Body},
	}
	for _, kv := range append(vars, fenceEnv(cl, serverURL)...) {
		fmt.Fprintf(w, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
}

// fenceEnv is what a worker hands the systems it changes
// (docs/agents.md, "Fencing your effects"): the lease's token, a stable
// prefix for operation ids and where the key that checks the token is.
func fenceEnv(cl *client.Claim, serverURL string) [][2]string {
	return [][2]string{
		{fence.EnvToken, cl.FenceToken},
		{fence.EnvOperationPrefix, cl.Item.ID + "/"},
		{fence.EnvKeysURL, strings.TrimRight(serverURL, "/") + fence.KeysPath},
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newHeartbeatCmd(stdio IO) *cobra.Command {
	var (
		progress, usage string
		extend          time.Duration
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "heartbeat",
		Short: "Extend the lease (exit 4 when it was lost)",
		Args:  args(cobra.NoArgs),
	}, func(ctx context.Context, s *session, _ []string, id string, epoch int64) error {
		now := time.Now()
		u, err := usageFlag(usage)
		if err != nil {
			return err
		}
		hb, err := s.api.Heartbeat(ctx, id, client.HeartbeatRequest{
			Epoch: epoch, Progress: jsonOrString(progress), LeaseSeconds: seconds(extend), WorkerTime: &now, Usage: u,
		})
		if err != nil {
			return err
		}
		if s.json {
			return printJSON(s.Out, hb)
		}
		printHeartbeat(s.Out, id, hb)
		switch {
		case hb.StopRequested && hb.StopReason != nil && *hb.StopReason == "budget_exhausted":
			fmt.Fprintln(s.Err, "the budget of this item's subtree is spent: release the item (`workgraph release`) and exit")
		case hb.StopRequested && hb.Lease.StopNote != nil:
			fmt.Fprintf(s.Err, "a person asked this worker to stop (%s): release the item (`workgraph release`) and exit\n", *hb.Lease.StopNote)
		case hb.StopRequested:
			fmt.Fprintln(s.Err, "a person asked this worker to stop: release the item (`workgraph release`) and exit")
		}
		return nil
	})
	cmd.Flags().StringVar(&progress, "progress", "", "progress report: JSON, or text sent as a JSON string")
	cmd.Flags().DurationVar(&extend, "extend", 0, "new time to live from now, e.g. 10m (default: the lease's own)")
	cmd.Flags().StringVar(&usage, "usage", "", `usage so far, e.g. '{"tokens_in": 1200, "tokens_out": 300, "cost_usd": 0.02, "tool_calls": 4}' (monotonic: a lower figure is ignored)`)
	return cmd
}

// jsonOrString returns s as JSON when it is valid JSON, else as a JSON
// string; empty stays nil.
func jsonOrString(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func newCompleteCmd(stdio IO) *cobra.Command {
	var (
		result, resultFile, resultTx, usage string
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "complete",
		Short: "Finish the leased item with a result",
		Long: `Finish the leased item with a JSON result.

  workgraph complete --result '{"summary": "merged in #42"}'
  workgraph complete --result-file result.json
  workgraph complete --result-text "fixed the flaky test"

A repeat of the same completion is answered as a replay; a different result
for an item already completed is refused (exit 6) and the first one stands.`,
		Args: args(cobra.NoArgs),
	}, func(ctx context.Context, s *session, _ []string, id string, epoch int64) error {
		res, err := resultFlag(stdio.In, result, resultFile, resultTx)
		if err != nil {
			return err
		}
		u, err := usageFlag(usage)
		if err != nil {
			return err
		}
		out, err := s.api.Complete(ctx, id, client.CompleteRequest{Epoch: epoch, Result: res, Usage: u})
		if err != nil {
			return err
		}
		if s.json {
			return printJSON(s.Out, out)
		}
		if out.Replayed {
			fmt.Fprintf(s.Out, "item %s was already completed with this result (replay acknowledged)\n", out.Lease.ItemID)
		} else {
			fmt.Fprintf(s.Out, "item %s done\n", out.Lease.ItemID)
		}
		return nil
	})
	fl := cmd.Flags()
	fl.StringVar(&result, "result", "", "result as JSON")
	fl.StringVar(&resultFile, "result-file", "", "read the JSON result from this file (- for stdin)")
	fl.StringVar(&resultTx, "result-text", "", "result as plain text (sent as {\"result_text\": ...}, the shape the work supervisor uses)")
	fl.StringVar(&usage, "usage", "", "the lease's final usage, as for heartbeat --usage")
	return cmd
}

// resultFlag picks the one result source given; none gives null.
func resultFlag(stdin io.Reader, result, file, text string) (json.RawMessage, error) {
	given := 0
	for _, v := range []string{result, file, text} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return nil, usageError("give only one of --result, --result-file and --result-text")
	}
	switch {
	case text != "":
		b, _ := json.Marshal(map[string]string{"result_text": text})
		return b, nil
	case file != "":
		var data []byte
		var err error
		if file == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, usageError("result file: %v", err)
		}
		result = string(data)
		if strings.TrimSpace(result) == "" {
			return nil, usageError("result file %s is empty", file)
		}
	case result == "":
		return json.RawMessage("null"), nil
	}
	if !json.Valid([]byte(result)) {
		return nil, usageError("the result is not valid JSON; quote it for the shell, e.g. --result '{\"summary\": \"...\"}', or use --result-text")
	}
	return json.RawMessage(result), nil
}

func newReleaseCmd(stdio IO) *cobra.Command {
	var (
		reason string
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "release",
		Short: "Give the leased item back to circulation",
		Args:  args(cobra.NoArgs),
	}, func(ctx context.Context, s *session, _ []string, id string, epoch int64) error {
		out, err := s.api.Release(ctx, id, client.ReleaseRequest{Epoch: epoch, Reason: reason})
		if err != nil {
			return err
		}
		if s.json {
			return printJSON(s.Out, out)
		}
		fmt.Fprintf(s.Out, "item %s released\n", out.Lease.ItemID)
		return nil
	})
	cmd.Flags().StringVar(&reason, "reason", "", "why the item is given back")
	return cmd
}

func newFailCmd(stdio IO) *cobra.Command {
	var (
		details string
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "fail MESSAGE",
		Short: "Report that the attempt failed (the item is retried after a backoff)",
		Args:  args(cobra.ExactArgs(1)),
	}, func(ctx context.Context, s *session, a []string, id string, epoch int64) error {
		if details != "" && !json.Valid([]byte(details)) {
			return usageError("--details is not valid JSON")
		}
		var det json.RawMessage
		if details != "" {
			det = json.RawMessage(details)
		}
		out, err := s.api.Fail(ctx, id, client.FailRequest{Epoch: epoch, Error: a[0], Details: det})
		if err != nil {
			return err
		}
		if s.json {
			return printJSON(s.Out, out)
		}
		fmt.Fprintf(s.Out, "item %s failed; it %s\n", out.Lease.ItemID, afterFailure(out))
		return nil
	})
	cmd.Flags().StringVar(&details, "details", "", "details as JSON")
	return cmd
}

func newDecomposeCmd(stdio IO) *cobra.Command {
	var (
		titles []string
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "decompose [FILE|-]",
		Short: "Split the leased item into children (the lease ends; the item waits for them)",
		Long: `Split the leased item into children, atomically. The lease ends as
decomposed and the item becomes ready again once every child is finished.

Children come from a YAML or JSON file (or - for stdin), a list of
{key, title, body?, priority?, labels?, requires?, touches?,
depends_on?: [sibling keys]} (requires and touches as in items add):

  - key: schema
    title: Write the migration
    requires: [db-migrations]
    touches: ["db:schema"]
  - key: api
    title: Add the endpoint
    depends_on: [schema]

or, for quick independent children, from repeated --child flags:
  workgraph decompose --child "Write the migration" --child "Add the endpoint"`,
		Args: args(cobra.MaximumNArgs(1)),
	}, func(ctx context.Context, s *session, a []string, id string, epoch int64) error {
		var children []client.Child
		if len(a) == 1 {
			name, data, err := readInput(stdio.In, a[0])
			if err != nil {
				return usageError("%v", err)
			}
			p, err := parsePlan(name, data, planOptions{flat: true})
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			children = p.children()
		}
		for i, t := range titles {
			children = append(children, client.Child{Key: fmt.Sprintf("child-%d", i+1), Title: t})
		}
		if len(children) == 0 {
			return usageError("no children: give a file or --child TITLE")
		}
		out, err := s.api.Decompose(ctx, id, client.DecomposeRequest{Epoch: epoch, Children: children})
		if err != nil {
			return err
		}
		if s.json {
			return printJSON(s.Out, out)
		}
		fmt.Fprintf(s.Out, "item %s split into %d children; the lease has ended and the item waits for them\n", out.Lease.ItemID, len(out.Children))
		t := newTable(s.Out)
		fmt.Fprintln(t, "ID\tSTATE\tTITLE")
		for _, c := range out.Children {
			fmt.Fprintf(t, "%s\t%s\t%s\n", c.ID, c.State, clip(c.Title, 60))
		}
		return t.Flush()
	})
	cmd.Flags().StringArrayVar(&titles, "child", nil, "a child's title (repeatable)")
	return cmd
}

// readInput reads a named file, or stdin for "-".
func readInput(stdin io.Reader, name string) (string, []byte, error) {
	if name == "-" {
		data, err := io.ReadAll(stdin)
		return "<stdin>", data, err
	}
	data, err := os.ReadFile(name)
	return name, data, err
}

func newAskCmd(stdio IO) *cobra.Command {
	var (
		suggest     []string
		ctxJSON     string
		nonBlocking bool
		dueIn       time.Duration
		onOverdue   string
		defAnswer   string
	)
	cmd := leaseCommand(stdio, &cobra.Command{
		Use:   "ask QUESTION",
		Short: "Ask a person a question about the leased item",
		Long: `Open an attention request on the leased item.

By default the request is blocking: the lease ends at once (outcome
attention_requested) and the item waits until a person answers; the next
claim of the item (the same worker is preferred for a while) carries the
question and the answer. Exit after asking. Under ` + "`workgraph work`" + ` the
supervisor notices and stops quietly without failing the item.

With --non-blocking the lease keeps running and the answer arrives on a
later heartbeat (under the supervisor: in the file $WORKGRAPH_ANSWERS_FILE).

--due-in gives the question a deadline (else the project's default, if
any); when it passes an attention.overdue event fires and --on-overdue
acts: escalate (the event says so, for a second webhook), default_answer
(answer with --default-answer, marked as such) or release (the item goes
back to circulation, the question stays open).`,
		Args: args(cobra.ExactArgs(1)),
	}, func(ctx context.Context, s *session, a []string, id string, epoch int64) error {
		if ctxJSON != "" && !json.Valid([]byte(ctxJSON)) {
			return usageError("--context is not valid JSON")
		}
		req := client.AskRequest{Epoch: epoch, Question: a[0], SuggestedAnswers: suggest}
		if ctxJSON != "" {
			req.Context = json.RawMessage(ctxJSON)
		}
		blocking := !nonBlocking
		req.Blocking = &blocking
		if dueIn != 0 {
			if dueIn < time.Second || dueIn%time.Second != 0 {
				return usageError("--due-in must be whole seconds, at least 1s")
			}
			secs := int64(dueIn / time.Second)
			req.DueInSeconds = &secs
		}
		req.OnOverdue, req.DefaultAnswer = onOverdue, defAnswer
		out, err := s.api.Ask(ctx, id, req)
		if err != nil {
			return err
		}
		if blocking {
			if err := writeAttentionControl(out); err != nil {
				fmt.Fprintf(s.Err, "workgraph: warning: could not tell the supervisor: %v\n", err)
			}
		}
		if s.json {
			return printJSON(s.Out, out)
		}
		if blocking {
			fmt.Fprintf(s.Out, "asked a person (request %s). The lease has ended and the item waits for the answer: stop working on it and exit now.\n", out.Attention.ID)
		} else {
			fmt.Fprintf(s.Out, "asked a person (request %s); keep working, the answer arrives on a heartbeat\n", out.Attention.ID)
		}
		return nil
	})
	fl := cmd.Flags()
	fl.StringArrayVar(&suggest, "suggest", nil, "a suggested answer (repeatable)")
	fl.StringVar(&ctxJSON, "context", "", "context for the person, as JSON")
	fl.BoolVar(&nonBlocking, "non-blocking", false, "keep the lease; the answer arrives on a heartbeat")
	fl.DurationVar(&dueIn, "due-in", 0, "the question's deadline, e.g. 30m (default: the project's, if any)")
	fl.StringVar(&onOverdue, "on-overdue", "", "at the deadline: escalate, default_answer or release")
	fl.StringVar(&defAnswer, "default-answer", "", "the answer --on-overdue default_answer gives")
	return cmd
}

// writeAttentionControl tells a supervising `workgraph work` (through
// WORKGRAPH_STATE_DIR) that the lease ended for an attention request.
// Outside a supervisor it does nothing.
func writeAttentionControl(out *client.AskResult) error {
	dir := os.Getenv(envStateDir)
	if dir == "" {
		return nil
	}
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, attentionFile), data)
}

// writeFileAtomic writes data to path through a rename, so readers never
// see half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
