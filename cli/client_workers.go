package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
)

func init() { extraCommands = append(extraCommands, newWorkersCmd) }

// newWorkersCmd lists the project's workers a page at a time, in name
// order: each one's live leases, outcome counts, usage and when it was
// last heard from (GET /v1/projects/{p}/workers).
func newWorkersCmd(stdio IO) *cobra.Command {
	var (
		f   clientFlags
		opt client.WorkersOptions
		all bool
	)
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "The project's workers by name: live leases, outcome counts, usage (a page; --cursor, --all)",
		Example: `  workgraph workers
  workgraph workers --all --json`,
		Args: args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			out := client.Workers{Active: []client.Lease{}, Workers: []client.WorkerStat{}, Activity: []client.LeaseActivity{}}
			for {
				page, err := s.api.Workers(ctx, s.cfg.Project, opt)
				if err != nil {
					return err
				}
				out.Active = append(out.Active, page.Active...)
				out.Workers = append(out.Workers, page.Workers...)
				out.Activity = append(out.Activity, page.Activity...)
				out.NextCursor = page.NextCursor
				if !all || page.NextCursor == nil {
					break
				}
				opt.Cursor = *page.NextCursor
			}
			if s.json {
				return printJSON(s.Out, out)
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "WORKER\tACTIVE\tOUTCOMES\tTOKENS\tLAST SEEN")
			for _, w := range out.Workers {
				fmt.Fprintf(t, "%s\t%d\t%s\t%d\t%s\n", clip(w.Worker, 40), w.Active, outcomeCounts(w.Outcomes),
					w.Usage.TokensIn+w.Usage.TokensOut, fmtTime(w.LastSeen))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(out.Workers) == 0 {
				fmt.Fprintf(s.Err, "no worker has held a lease in project %q\n", s.cfg.Project)
			}
			if out.NextCursor != nil {
				fmt.Fprintf(s.Err, "more workers: --cursor %s, or --all\n", *out.NextCursor)
			}
			return nil
		}),
	}
	addClientFlags(cmd, &f)
	fl := cmd.Flags()
	fl.IntVar(&opt.Limit, "limit", 0, "page size (default: the server's)")
	fl.StringVar(&opt.Cursor, "cursor", "", "continue after this cursor")
	fl.BoolVar(&all, "all", false, "fetch every page")
	refuseBlankFilters(cmd, "cursor")
	return cmd
}

// outcomeCounts is a worker's ended leases per outcome, "completed=3
// failed=1" in name order ("-" for none).
func outcomeCounts(m map[string]int) string {
	var parts []string
	for o, n := range m {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
