package cli

import (
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

func init() { extraCommands = append(extraCommands, newEventsCmd) }

func newEventsCmd(stdio IO) *cobra.Command {
	var f clientFlags
	var after int64
	var types, itemID string
	var follow, all bool
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "events",
		Short: "Show the project's event log; --follow streams new events until interrupted",
		Long: "Show the project's events (item, lease, attention, plan and token changes), oldest first, as a table\n" +
			"or, with --json, one JSON object per line. --after N starts after event N (resume with the last SEQ\n" +
			"shown); --follow keeps streaming new events until Ctrl-C; --all reads every project (admin tokens).",
		Args: args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			project := s.cfg.Project
			if after < 0 {
				// The server refuses after=-1; the client would send no
				// after at all and read the whole log from its start.
				return usageError("--after %d: an event number is 0 or more (the SEQ of an event already seen)", after)
			}
			if all && itemID != "" {
				return &exitError{code: ExitUsage, err: errors.New(
					"--item cannot be used with --all: an item belongs to one project; leave --all out to read its events (the project is --project)")}
			}
			if all {
				project = ""
			} else {
				// The first characters of an id, as the ITEM column shows
				// them, name the item as they do in every command.
				var err error
				if itemID, err = s.resolveID(ctx, kindItem, itemID); err != nil {
					return err
				}
			}
			q := client.EventsQuery{After: after, ItemID: itemID}
			for _, t := range strings.Split(types, ",") {
				if t = strings.TrimSpace(t); t != "" {
					q.Types = append(q.Types, t)
				}
			}
			if len(q.Types) == 0 && cmd.Flags().Changed("types") {
				// --types "" (an unset variable) or "," would send no
				// filter at all: every event, the opposite of what was
				// asked.
				return usageError("--types %q names no event type: give one or more, comma-separated (e.g. --types attention.opened,lease.ended), or leave --types out for every type", types)
			}
			out := newEventPrinter(s.Out, s.json, all)
			if follow {
				for e, err := range s.api.Stream(ctx, project, q) {
					if errors.Is(err, context.Canceled) {
						return nil // interrupted
					}
					if err != nil {
						return err
					}
					if err := out.print(e); err != nil {
						return err
					}
				}
				return nil
			}
			for {
				page, err := s.api.Events(ctx, project, q)
				if err != nil {
					return err
				}
				for _, e := range page.Events {
					if err := out.print(e); err != nil {
						return err
					}
				}
				// next_after past the last event: the read reached the
				// log's horizon. At the last event: the page was full, or
				// cut by the server's byte budget, and more may follow.
				if len(page.Events) == 0 || page.NextAfter != page.Events[len(page.Events)-1].Seq {
					return out.flush()
				}
				q.After = page.NextAfter
			}
		}),
	}
	addClientFlags(cmd, &f)
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this SEQ")
	cmd.Flags().StringVar(&types, "types", "", "only these event types, comma-separated (e.g. attention.opened,lease.ended)")
	cmd.Flags().StringVar(&itemID, "item", "", "only this item's events (its id, or the first characters of it)")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep streaming new events until interrupted")
	cmd.Flags().BoolVar(&all, "all", false, "every project's events (admin tokens)")
	refuseBlankFilters(cmd, "item")
	return cmd
}

// eventPrinter prints events as table rows (flushed after each, so
// --follow shows them at once) or JSON lines.
type eventPrinter struct {
	w        io.Writer
	json     bool
	projects bool
	header   bool
}

func newEventPrinter(w io.Writer, asJSON, projects bool) *eventPrinter {
	return &eventPrinter{w: w, json: asJSON, projects: projects}
}

func (p *eventPrinter) print(e client.Event) error {
	if p.json {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.w, "%s\n", b)
		return err
	}
	// Fixed widths, not a tabwriter: a followed stream prints row by row.
	if !p.header {
		p.header = true
		if p.projects {
			fmt.Fprintf(p.w, "%-9s", "PROJECT")
		}
		fmt.Fprintf(p.w, "%-8s  %-19s  %-19s  %-16s  %-8s  %s\n", "SEQ", "TIME", "TYPE", "ACTOR", "ITEM", "DETAILS")
	}
	if p.projects {
		fmt.Fprintf(p.w, "%-9s", shortID(&e.ProjectID))
	}
	_, err := fmt.Fprintf(p.w, "%-8d  %-19s  %-19s  %-16s  %-8s  %s\n", e.Seq, e.At.Local().Format(time.DateTime), e.Type,
		clip(e.Actor, 16), orDash(shortID(e.ItemID)), clip(string(e.Payload), 80))
	return err
}

func (p *eventPrinter) flush() error {
	if !p.json && !p.header {
		_, err := fmt.Fprintln(p.w, "no events")
		return err
	}
	return nil
}

// shortID is the first 8 characters of an id ("" for none).
func shortID(id *string) string {
	if id == nil {
		return ""
	}
	if len(*id) > 8 {
		return (*id)[:8]
	}
	return *id
}
