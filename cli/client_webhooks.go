package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/client"
)

func init() { extraCommands = append(extraCommands, newWebhooksCmd) }

func newWebhooksCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Subscribe URLs to the project's events, and see their deliveries (admin or human token)",
		Long: `Subscribe URLs to the project's events (admin or human token).

Each event is delivered at least once to every enabled webhook that wants its
type, signed as the Standard Webhooks specification says (headers webhook-id,
webhook-timestamp and webhook-signature; the secret is printed once, at
create). Failed deliveries are retried for a day; a webhook that fails for a
day is disabled (enable it again once its receiver works: what waited is
then delivered). --format slack sends Slack-compatible messages for
attention events.`,
	}
	addClientFlags(cmd, &f)
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the project's webhooks (never their secrets)",
		Args:    args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			ws, err := s.api.ListWebhooks(ctx, s.cfg.Project)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]any{"webhooks": ws})
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "ID\tURL\tFORMAT\tEVENTS\tSTATE")
			for _, w := range ws {
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", w.ID, clip(w.URL, 60), w.Format, eventTypes(w.EventTypes), webhookState(w, time.Now()))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(ws) == 0 {
				fmt.Fprintf(s.Err, "no webhooks in project %q; subscribe a URL with `workgraph webhooks create URL`\n", s.cfg.Project)
			}
			return nil
		}),
	}
	var (
		types             []string
		format, recipient string
		description       string
		disabled          bool
	)
	create := &cobra.Command{
		Use:   "create URL [--events TYPE,...] [--format standard|slack]",
		Short: "Subscribe URL; the signing secret is printed once",
		Example: `  workgraph webhooks create https://ci.example.com/workgraph --events attention.opened,lease.ended
  workgraph webhooks create https://hooks.slack.com/services/T/B/X --format slack --events attention.opened --recipient ann`,
		Args: args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			req := client.CreateWebhookRequest{URL: a[0], EventTypes: types, Format: format, Description: description}
			if recipient != "" {
				req.Recipient = &recipient
			}
			if disabled {
				off := false
				req.Enabled = &off
			}
			w, err := s.api.CreateWebhook(ctx, s.cfg.Project, req)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, w)
			}
			fmt.Fprintf(s.Out, "%s\n", w.Secret)
			fmt.Fprintf(s.Err, "created webhook %s for %s (%s, events: %s); the signing secret above is shown only once\n",
				w.ID, w.URL, w.Format, eventTypes(w.EventTypes))
			return nil
		}),
	}
	cf := create.Flags()
	cf.StringSliceVar(&types, "types", nil, "event types wanted, comma-separated (default: every type); --events is an alias")
	// --events, the flag's first name, is read as --types (the name the
	// events command uses).
	cf.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "events" {
			name = "types"
		}
		return pflag.NormalizedName(name)
	})
	cf.StringVar(&format, "format", "", "standard (Standard Webhooks JSON, the default) or slack")
	cf.StringVar(&recipient, "recipient", "", "the person the notifications reach; answer links (if the project turned them on) are made out to them")
	cf.StringVar(&description, "description", "", "a note for people reading the list")
	cf.BoolVar(&disabled, "disabled", false, "create it disabled")
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Delete a webhook and its delivery records",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveHook(ctx, a[0])
			if err != nil {
				return err
			}
			if err := s.api.DeleteWebhook(ctx, s.cfg.Project, id); err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]string{"deleted": id})
			}
			fmt.Fprintf(s.Out, "webhook %s deleted\n", id)
			return nil
		}),
	}
	enable := func(on bool) *cobra.Command {
		verb := "disable"
		short := "Stop delivering to a webhook (its events wait until it is enabled)"
		if on {
			verb = "enable"
			short = "Deliver to a webhook again, the events that waited first"
		}
		return &cobra.Command{
			Use:   verb + " ID",
			Short: short,
			Args:  args(cobra.ExactArgs(1)),
			RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
				id, err := s.resolveHook(ctx, a[0])
				if err != nil {
					return err
				}
				w, err := s.api.UpdateWebhook(ctx, s.cfg.Project, id, client.UpdateWebhookRequest{Enabled: &on})
				if err != nil {
					return err
				}
				if s.json {
					return printJSON(s.Out, w)
				}
				fmt.Fprintf(s.Out, "webhook %s %sd\n", w.ID, verb)
				return nil
			}),
		}
	}
	var grace time.Duration
	rotate := &cobra.Command{
		Use:   "rotate ID [--grace 24h]",
		Short: "Give a webhook a new signing secret, printed once; the old one signs beside it for --grace",
		Example: `  workgraph webhooks rotate 3f2c9a1b              # the old secret keeps signing for a day
  workgraph webhooks rotate 3f2c9a1b --grace 0     # the old secret stops at once`,
		Args: args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveHook(ctx, a[0])
			if err != nil {
				return err
			}
			secs := int64(grace / time.Second)
			w, err := s.api.RotateWebhookSecret(ctx, s.cfg.Project, id, client.RotateWebhookSecretRequest{GraceSeconds: &secs})
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, w)
			}
			fmt.Fprintf(s.Out, "%s\n", w.Secret)
			until := "at once"
			if w.PreviousSecretUntil != nil && secs > 0 {
				until = "until " + fmtTime(*w.PreviousSecretUntil)
			}
			fmt.Fprintf(s.Err, "webhook %s has a new signing secret (above, shown only once); the old one stops signing %s\n", w.ID, until)
			return nil
		}),
	}
	rotate.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the old secret signs beside the new one (0: it stops at once; at most 168h)")
	var (
		limit      int
		before     int64
		allDeliver bool
	)
	deliveries := &cobra.Command{
		Use:   "deliveries ID",
		Short: "A webhook's deliveries, newest first: state, attempts, last status and latency (--before, --all)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			if before < 0 {
				return usageError("--before %d: an event number is 1 or more (the SEQ of a delivery shown)", before)
			}
			id, err := s.resolveHook(ctx, a[0])
			if err != nil {
				return err
			}
			ds := &client.DeliveryList{Deliveries: []client.Delivery{}}
			for {
				page, err := s.api.ListDeliveries(ctx, s.cfg.Project, id, before, limit)
				if err != nil {
					return err
				}
				ds.Deliveries = append(ds.Deliveries, page.Deliveries...)
				ds.NextBefore = page.NextBefore
				if !allDeliver || page.NextBefore == nil {
					break
				}
				before = *page.NextBefore
			}
			if s.json {
				return printJSON(s.Out, ds)
			}
			if ds.NextBefore != nil {
				defer fmt.Fprintf(s.Err, "older deliveries: --before %d, or --all\n", *ds.NextBefore)
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "SEQ\tEVENT\tSTATE\tATTEMPTS\tSTATUS\tLATENCY\tNEXT\tANSWER")
			for _, d := range ds.Deliveries {
				status, latency := "-", "-"
				if d.StatusCode != nil {
					status = fmt.Sprint(*d.StatusCode)
				}
				if d.LatencyMs != nil {
					latency = fmt.Sprintf("%dms", *d.LatencyMs)
				}
				answer := deref(d.Error, deref(d.Response, "-"))
				fmt.Fprintf(t, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Seq, d.EventType, d.State, d.Attempts, status,
					latency, fmtTimePtr(d.NextAttemptAt), clip(strings.Join(strings.Fields(answer), " "), 50))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(ds.Deliveries) == 0 {
				if before > 0 {
					fmt.Fprintf(s.Err, "no deliveries of webhook %s before event %d\n", id, before)
				} else {
					fmt.Fprintf(s.Err, "no deliveries of webhook %s yet\n", id)
				}
			}
			return nil
		}),
	}
	deliveries.Flags().IntVar(&limit, "limit", 0, "page size (1..500; default 50)")
	deliveries.Flags().Int64Var(&before, "before", 0, "only deliveries of events before this SEQ (the next page: the SEQ printed after the last)")
	deliveries.Flags().BoolVar(&allDeliver, "all", false, "fetch every page")
	cmd.RunE = ls.RunE
	cmd.AddCommand(ls, create, rm, enable(true), enable(false), rotate, deliveries)
	return cmd
}

func eventTypes(ts []string) string {
	if len(ts) == 0 {
		return "all"
	}
	return strings.Join(ts, ",")
}

// webhookState says in a few words where webhook w stands at now (the
// process clock: what is shown, never what is decided).
func webhookState(w client.Webhook, now time.Time) string {
	switch {
	case w.Enabled && w.FailingSince != nil && w.PausedUntil != nil && w.PausedUntil.After(now):
		return fmt.Sprintf("failing since %s, paused until %s after %d failures in a row",
			fmtTime(*w.FailingSince), fmtTime(*w.PausedUntil), w.ConsecutiveFailures)
	case w.Enabled && w.FailingSince != nil:
		return "failing since " + fmtTime(*w.FailingSince)
	case w.Enabled:
		return "enabled"
	case w.DisabledReason != nil:
		return "disabled (" + *w.DisabledReason + ")"
	}
	return "disabled"
}
