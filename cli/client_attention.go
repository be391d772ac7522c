package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
)

func init() { extraCommands = append(extraCommands, newAttentionCmd, newHistoryCmd) }

func newAttentionCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "List and answer the questions agents asked people",
	}
	addClientFlags(cmd, &f)
	var state, itemID string
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List attention requests, oldest first (default: open ones)",
		Args:    args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			reqs := []client.AttentionRequest{} // an empty list is [] in --json, as in the API, not null
			item, err := s.resolveID(ctx, kindItem, itemID)
			if err != nil {
				return err
			}
			opt := client.ListAttentionOptions{State: state, ItemID: item}
			for {
				page, err := s.api.ListAttention(ctx, s.cfg.Project, opt)
				if err != nil {
					return err
				}
				reqs = append(reqs, page.Attention...)
				if page.NextCursor == nil {
					break
				}
				opt.Cursor = *page.NextCursor
			}
			if s.json {
				return printJSON(s.Out, client.AttentionPage{Attention: reqs})
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "ID\tITEM\tASKED BY\tWAITING\tBLOCKING\tQUESTION")
			for _, r := range reqs {
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%v\t%s\n", r.ID, itemLabel(r.ItemID, r.ItemTitle), orDash(r.RequestedBy),
					time.Since(r.CreatedAt).Round(time.Second), r.Blocking, clip(r.Question, 70))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(reqs) == 0 {
				about := ""
				if item != "" {
					about = " about item " + item
				}
				fmt.Fprintf(s.Err, "no %s attention requests%s in project %q\n", state, about, s.cfg.Project)
			}
			words, budgets, uncertain := false, false, false
			for _, r := range reqs {
				switch r.Reason {
				case "budget_exhausted":
					budgets = true
				case reasonUncertainOutcome:
					uncertain = true
				default:
					words = true
				}
			}
			if words {
				fmt.Fprintln(s.Err, "answer with: workgraph attention resolve ID \"answer\"")
			}
			if uncertain {
				fmt.Fprintln(s.Err, "an uncertain outcome takes a decision: workgraph attention show ID, then workgraph attention resolve ID --decision retry|done|cancel")
			}
			if budgets {
				// An answer in words does not close a spent budget's request.
				fmt.Fprintln(s.Err, "a spent budget is answered by raising it: workgraph items budget ITEM --max-tokens N --max-cost-usd USD ...")
			}
			return nil
		}),
	}
	ls.Flags().StringVar(&state, "state", "open", "open, resolved or dismissed")
	ls.Flags().StringVar(&itemID, "item", "", "only requests about this item")
	refuseBlankFilters(ls, "state", "item")
	var answer, decision, result, resultFile, resultTx, note string
	resolve := &cobra.Command{
		Use:   "resolve ID [ANSWER]",
		Short: "Answer an attention request, or decide an uncertain outcome (people only)",
		Long: `Answer an attention request: the item can be claimed again, and its
next claim (the asking worker is preferred for a while) carries the answer.
The answer is the second argument, or --answer.

An uncertain_outcome request (a lease of an item with on_expiry reconcile
expired: its attempt may still be running or may have applied its effect)
is resolved with a decision instead, after reading the attempt and its late
reports (attention show ID):
  --decision retry    hand the item out again (the next claim has epoch + 1)
  --decision done     the item is done, with --result (or --result-file,
                      --result-text) as its result, decided by you
  --decision cancel   cancel the item
--note says why (kept with the decision).`,
		Example: `  workgraph attention resolve 3f2c9a1b "use PostgreSQL 16"
  workgraph attention resolve 8d01e2aa --decision done --result '{"deployed": true}' --note "checked the dashboard"
  workgraph attention resolve 8d01e2aa --decision retry`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			if decision != "" {
				return decide(ctx, stdio, s, a, decision, note, result, resultFile, resultTx)
			}
			switch {
			case result != "" || resultFile != "" || resultTx != "" || note != "":
				return usageError("--result, --result-file, --result-text and --note go with --decision (an uncertain outcome)")
			case len(a) == 2 && answer != "":
				return usageError("give the answer once: as the second argument or as --answer, not both")
			case len(a) == 2:
				answer = a[1]
			case answer == "":
				return usageError("no answer: workgraph attention resolve ID \"answer\" (or --answer \"answer\"; an uncertain outcome: --decision retry|done|cancel)")
			}
			id, err := s.resolveID(ctx, kindAttention, a[0])
			if err != nil {
				return err
			}
			r, err := s.api.Resolve(ctx, id, answer)
			if invalidField(err) == "decision" {
				return usageError("request %s is an uncertain outcome: it takes a decision, not an answer (read it with `workgraph attention show %s`, then: workgraph attention resolve %s --decision retry|done|cancel)", id, id, id)
			}
			if errors.Is(err, client.ErrConflict) {
				return closedAlready(ctx, s, id, answer, err)
			}
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, r)
			}
			fmt.Fprintf(s.Out, "request %s resolved; %s\n", r.ID, afterAnswer(ctx, s, r))
			return nil
		}),
	}
	fl := resolve.Flags()
	fl.StringVar(&answer, "answer", "", "the answer (instead of the second argument)")
	fl.StringVar(&decision, "decision", "", "decide an uncertain outcome: retry, done or cancel")
	fl.StringVar(&result, "result", "", "with --decision done: the item's result as JSON")
	fl.StringVar(&resultFile, "result-file", "", "with --decision done: read the JSON result from this file (- for stdin)")
	fl.StringVar(&resultTx, "result-text", "", "with --decision done: the result as plain text (sent as {\"result_text\": ...})")
	fl.StringVar(&note, "note", "", "with --decision: why (kept with the decision)")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show an attention request: the question, the attempt it is about and its late reports",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveID(ctx, kindAttention, a[0])
			if err != nil {
				return err
			}
			r, err := s.api.GetAttention(ctx, id)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, r)
			}
			printAttention(s.Out, r)
			return nil
		}),
	}
	cmd.AddCommand(ls, show, resolve)
	return cmd
}

func newHistoryCmd(stdio IO) *cobra.Command {
	var (
		f            clientFlags
		opt          client.HistoryOptions
		since, until string
		all          bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Lease history, newest first (filter by item, worker, outcome, time; --sort)",
		Example: `  workgraph history --item <id>
  workgraph history --worker laptop-1 --outcome failed --since 24h
  workgraph history --sort -ran          # the longest leases first`,
		Args: args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			var err error
			if opt.ItemID, err = s.resolveID(ctx, kindItem, opt.ItemID); err != nil {
				return err
			}
			if opt.Since, err = parseWhen(since); err != nil {
				return usageError("--since: %v", err)
			}
			if opt.Until, err = parseWhen(until); err != nil {
				return usageError("--until: %v", err)
			}
			leases := []client.Lease{} // an empty list is [] in --json, as in the API, not null
			var next *string
			for {
				page, err := s.api.History(ctx, s.cfg.Project, opt)
				if err != nil {
					return err
				}
				leases = append(leases, page.Leases...)
				next = page.NextCursor
				if !all || next == nil {
					break
				}
				opt.Cursor = *next
			}
			if s.json {
				return printJSON(s.Out, client.LeasePage{Leases: leases, NextCursor: next})
			}
			printLeases(s.Out, leases)
			if len(leases) == 0 {
				filtered := ""
				if opt.ItemID != "" || opt.Worker != "" || opt.Outcome != "" || !opt.Since.IsZero() || !opt.Until.IsZero() || opt.Cursor != "" {
					filtered = " match these filters"
				}
				fmt.Fprintf(s.Err, "no leases in project %q%s\n", s.cfg.Project, filtered)
			}
			if next != nil {
				fmt.Fprintf(s.Err, "more leases: --cursor %s, or --all\n", *next)
			}
			return nil
		}),
	}
	addClientFlags(cmd, &f)
	fl := cmd.Flags()
	fl.StringVar(&opt.ItemID, "item", "", "only leases of this item")
	fl.StringVar(&opt.Worker, "worker", "", "only leases of this worker label")
	fl.StringVar(&opt.Outcome, "outcome", "", "completed, released, failed, cancelled, decomposed, attention_requested or expired")
	fl.StringVar(&opt.Sort, "sort", "-acquired", "order: -acquired (newest first), acquired (oldest first), -ran or ran (by how long each lease ran)")
	fl.StringVar(&since, "since", "", "from this time (RFC 3339, or a duration ago such as 24h)")
	fl.StringVar(&until, "until", "", "up to this time (RFC 3339, or a duration ago)")
	fl.IntVar(&opt.Limit, "limit", 0, "page size (default: the server's)")
	fl.StringVar(&opt.Cursor, "cursor", "", "continue after this cursor")
	fl.BoolVar(&all, "all", false, "fetch every page")
	refuseBlankFilters(cmd, "item", "worker", "outcome", "sort", "since", "until", "cursor")
	return cmd
}

// parseWhen reads an RFC 3339 time or a duration before now.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-01-02T15:04:05Z), a date, or a duration such as 24h", s)
}

func printLeases(w io.Writer, leases []client.Lease) {
	t := newTable(w)
	fmt.Fprintln(t, "LEASE\tITEM\tEPOCH\tWORKER\tACQUIRED\tENDED\tOUTCOME\tDETAIL")
	for _, l := range leases {
		outcome := deref(l.Outcome, "active")
		detail := clip(leaseDetail(l.OutcomeDetail), 60)
		fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.ItemID, l.Epoch, clip(l.Worker, 32),
			fmtTime(l.AcquiredAt), fmtTimePtr(l.EndedAt), outcome, detail)
	}
	t.Flush()
}

// afterAnswer says where an answered request leaves its item: ready and
// kept for the worker that asked (until when), or its state. A failed read
// of the item says only that it can be picked up again.
func afterAnswer(ctx context.Context, s *session, r *client.AttentionRequest) string {
	it, err := s.api.GetItem(ctx, s.cfg.Project, r.ItemID)
	if err != nil {
		return "item " + r.ItemID + " can be picked up again"
	}
	name := itemLabel(it.ID, it.Title)
	if b := it.BlockedBy; b.ReservedFor != nil {
		until := ""
		if b.ReservedUntil != nil {
			until = " until " + fmtTime(*b.ReservedUntil)
		}
		return fmt.Sprintf("item %s is ready again, kept for worker %q%s (it asked; its next claim carries the answer)", name, *b.ReservedFor, until)
	}
	return fmt.Sprintf("item %s is %s", name, it.State)
}

// leaseDetail says in words what a lease's outcome detail holds: a
// failure's message, a release's reason, the question an attention
// request asked (its id), the children of a decomposition, who cancelled
// the item (and why); any other detail as its JSON.
func leaseDetail(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var d struct {
		Message    *string           `json:"message"`
		Reason     *string           `json:"reason"`
		Attention  *string           `json:"attention_request_id"`
		By         *string           `json:"by"`
		Children   []json.RawMessage `json:"children"`
		ReapedAt   *time.Time        `json:"reaped_at"`
		Heartbeats *int              `json:"heartbeats"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return strings.TrimSpace(string(raw))
	}
	switch {
	case d.Attention != nil:
		s := "asked a person (request " + shortID(d.Attention) + ")"
		if d.Reason != nil && *d.Reason != "" {
			s += ": " + *d.Reason
		}
		return s
	case d.By != nil && *d.By != "":
		// A cancel's: who cancelled the item, and why if they said.
		s := "cancelled by " + *d.By
		if d.Reason != nil && *d.Reason != "" {
			s += ": " + *d.Reason
		}
		return s
	case d.Message != nil && *d.Message != "":
		return *d.Message
	case d.Reason != nil && *d.Reason != "":
		return *d.Reason
	case d.Children != nil:
		return count(len(d.Children), "child", "children")
	case d.ReapedAt != nil:
		s := "not renewed; reaped " + fmtTime(*d.ReapedAt)
		if d.Heartbeats != nil {
			s += " after " + count(*d.Heartbeats, "heartbeat", "heartbeats")
		}
		return s
	}
	return strings.TrimSpace(string(raw))
}

// itemLabel names an item for a person: its title and the first 8
// characters of its id (the full id when the title is unknown).
func itemLabel(id, title string) string {
	if title == "" || len(id) < 8 {
		return id
	}
	return clip(title, 40) + " (" + id[:8] + ")"
}

// reasonUncertainOutcome is the reason of the system request an expired
// lease of an item with on_expiry reconcile opens.
const reasonUncertainOutcome = "uncertain_outcome"

// decide resolves the uncertain outcome a[0] with a decision (retry, done
// with a result, cancel) and an optional note.
func decide(ctx context.Context, stdio IO, s *session, a []string, decision, note, result, resultFile, resultTx string) error {
	switch decision {
	case client.DecisionRetry, client.DecisionDone, client.DecisionCancel:
	default:
		return usageError("--decision %q: want retry, done or cancel", decision)
	}
	if len(a) == 2 {
		return usageError("a decision takes no answer: give --decision or an answer, not both")
	}
	var res json.RawMessage
	if result != "" || resultFile != "" || resultTx != "" {
		if decision != client.DecisionDone {
			return usageError("a result goes only with --decision done")
		}
		var err error
		if res, err = resultFlag(stdio.In, result, resultFile, resultTx); err != nil {
			return err
		}
	}
	id, err := s.resolveID(ctx, kindAttention, a[0])
	if err != nil {
		return err
	}
	r, err := s.api.Decide(ctx, id, decision, res, note)
	if err != nil {
		return err
	}
	if s.json {
		return printJSON(s.Out, r)
	}
	fmt.Fprintf(s.Out, "request %s decided: %s; %s\n", r.ID, decision, afterAnswer(ctx, s, r))
	return nil
}

// printAttention prints one request: its question, state and answer, the
// attempt an uncertain outcome is about and what that attempt reported
// after its lease had expired.
func printAttention(w io.Writer, r *client.AttentionRequest) {
	t := newTable(w)
	fmt.Fprintf(t, "request\t%s\nitem\t%s\nasked by\t%s\nreason\t%s\nstate\t%s\ncreated\t%s\n",
		r.ID, itemLabel(r.ItemID, r.ItemTitle), orDash(r.RequestedBy), orDash(r.Reason), r.State, fmtTime(r.CreatedAt))
	if r.Decision != nil {
		fmt.Fprintf(t, "decision\t%s\n", *r.Decision)
	}
	if r.Answer != nil {
		fmt.Fprintf(t, "answer\t%s\n", *r.Answer)
	}
	if r.ResolvedBy != nil {
		fmt.Fprintf(t, "resolved by\t%s\n", *r.ResolvedBy)
	}
	t.Flush()
	fmt.Fprintf(w, "\n%s\n", r.Question)
	if len(r.Context) > 0 && string(r.Context) != "null" && string(r.Context) != "{}" {
		fmt.Fprintf(w, "\ncontext:\n%s\n", indentJSON(r.Context))
	}
	if r.Reason == reasonUncertainOutcome {
		if len(r.LateReports) == 0 {
			fmt.Fprintln(w, "\nno late report from that attempt")
		}
		for _, o := range r.LateReports {
			what := o.Operation
			if what == "" {
				what = o.Kind
			}
			fmt.Fprintf(w, "\nlate report: %s of lease %s (epoch %d), received %s", what, o.LeaseID, o.Epoch, fmtTime(o.ReceivedAt))
			if o.WorkerTime != nil {
				fmt.Fprintf(w, " (worker's clock %s)", fmtTime(*o.WorkerTime))
			}
			fmt.Fprintf(w, ", not applied:\n%s\n", indentJSON(o.Payload))
		}
		if r.State == "open" {
			fmt.Fprintf(w, "\ndecide: workgraph attention resolve %s --decision retry|done|cancel [--result JSON] [--note TEXT]\n", r.ID)
		}
	}
}

// indentJSON is raw indented by two spaces, or as it is when it is not
// JSON.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "  ", "  "); err != nil {
		return "  " + string(raw)
	}
	return "  " + b.String()
}

// invalidField is the field an invalid_argument refusal names ("" for any
// other error).
func invalidField(err error) string {
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != client.CodeInvalidArgument {
		return ""
	}
	var field string
	ae.Extension("field", &field)
	return field
}

// closedAlready explains the refusal (refused, 409 conflict) of an answer
// to request id: when the request was closed already it says by whom, when
// and how (the first answer stands, and this one was not recorded), since
// answering again cannot succeed; otherwise (still open, or unreadable) it
// is refused as the server refused it.
func closedAlready(ctx context.Context, s *session, id, answer string, refused error) error {
	req, err := s.api.GetAttention(ctx, id)
	if err != nil || req.State == "open" {
		return refused
	}
	by, at := "someone", ""
	if req.ResolvedBy != nil {
		by = *req.ResolvedBy
	}
	if req.ResolvedAt != nil {
		at = " at " + fmtTime(*req.ResolvedAt)
	}
	how, kept := "", ""
	switch {
	case req.Decision != nil:
		how = fmt.Sprintf("already decided (%s) by %s%s", *req.Decision, by, at)
	case req.State == "dismissed":
		how = fmt.Sprintf("already dismissed by %s%s", by, at)
		if req.Answer != nil && *req.Answer != "" {
			how += fmt.Sprintf(" (%q)", *req.Answer)
		}
	default:
		how, kept = fmt.Sprintf("already answered by %s%s", by, at), "the first answer stands and "
		if req.Answer != nil {
			how += fmt.Sprintf(": %q", *req.Answer)
		}
	}
	return &exitError{code: ExitConflict, err: fmt.Errorf("attention request %s was %s\n  nothing changed: %s%q was not recorded (`workgraph attention ls --state %s` shows it)",
		req.ID, how, kept, answer, req.State)}
}
