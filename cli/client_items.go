package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
)

func init() { extraCommands = append(extraCommands, newItemsCmd, newDepsCmd) }

func newItemsCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "items",
		Aliases: []string{"item"},
		Short:   "Create, list, show, edit, cancel and budget work items",
	}
	addClientFlags(cmd, &f)
	cmd.AddCommand(itemsAddCmd(stdio, &f), itemsLsCmd(stdio, &f), itemsShowCmd(stdio, &f),
		itemsEditCmd(stdio, &f), itemsCancelCmd(stdio, &f), itemsBudgetCmd(stdio, &f))
	return cmd
}

func itemsAddCmd(stdio IO, f *clientFlags) *cobra.Command {
	var (
		body, bodyFile, parent string
		priority               int
		deps, labels           []string
		requires, touches      []string
		onExpiry               string
	)
	cmd := &cobra.Command{
		Use:     "add TITLE",
		Aliases: []string{"create"},
		Short:   "Create an item",
		Example: `  workgraph items add "Write the migration" --priority 5 --label db
  workgraph items add "Add the endpoint" --depends-on <item id> --body-file spec.md
  workgraph item create "Migrate the schema" --requires go,db-migrations --touches db:schema,repo:db/migrations/**
  workgraph items add "Deploy to production" --on-expiry reconcile   # an expired lease waits for a person's decision`,
		Args: args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, a []string) error {
			if bodyFile != "" {
				_, data, err := readInput(stdio.In, bodyFile)
				if err != nil {
					return usageError("body file: %v", err)
				}
				body = string(data)
			}
			var err error
			if parent, err = s.resolveID(ctx, kindItem, parent); err != nil {
				return err
			}
			if deps, err = s.resolveIDs(ctx, kindItem, deps); err != nil {
				return err
			}
			req := client.CreateItemRequest{Title: a[0], Body: body, ParentID: parent, DependsOn: deps, Labels: labels,
				Requires: requires, Touches: touches, OnExpiry: onExpiry}
			if s.flagChanged("priority") {
				req.Priority = &priority
			}
			it, err := s.api.CreateItem(ctx, s.cfg.Project, req)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, it)
			}
			fmt.Fprintf(s.Out, "created item %s (%s)\n", it.ID, it.State)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&body, "body", "", "the task's specification (markdown)")
	fl.StringVar(&bodyFile, "body-file", "", "read the body from this file (- for stdin)")
	fl.IntVar(&priority, "priority", 0, "priority, higher first")
	fl.StringVar(&parent, "parent", "", "parent item id")
	fl.StringSliceVar(&deps, "depends-on", nil, "ids of items this one waits for (comma-separated or repeated)")
	fl.StringSliceVar(&labels, "label", nil, "labels (comma-separated or repeated)")
	fl.StringSliceVar(&requires, "requires", nil, "capabilities a worker must offer to claim it (comma-separated)")
	fl.StringSliceVar(&touches, "touches", nil, "write scopes its lease holds, resource or resource:path/glob (comma-separated)")
	fl.StringVar(&onExpiry, "on-expiry", "", onExpiryUsage+" (default: the project's)")
	return cmd
}

// onExpiryUsage describes the on_expiry setting of an item or a project.
const onExpiryUsage = "what an expired lease means: retry (back to the queue) or reconcile (wait for a person's decision: the attempt may still be running or may have applied its effect)"

func itemsLsCmd(stdio IO, f *clientFlags) *cobra.Command {
	var (
		opt client.ListItemsOptions
		all bool
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List items (filter by --state, --label, --parent, --text; order by --sort)",
		Args:    args(cobra.NoArgs),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, _ []string) error {
			items := []client.Item{} // an empty list is [] in --json, as in the API, not null
			var next *string
			var err error
			if opt.ParentID, err = s.resolveID(ctx, kindItem, opt.ParentID); err != nil {
				return err
			}
			for {
				page, err := s.api.ListItems(ctx, s.cfg.Project, opt)
				if err != nil {
					return err
				}
				items = append(items, page.Items...)
				next = page.NextCursor
				if !all || next == nil {
					break
				}
				opt.Cursor = *next
			}
			if s.json {
				return printJSON(s.Out, client.ItemPage{Items: items, NextCursor: next})
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "ID\tSTATE\tPRI\tTITLE\tLABELS")
			for _, it := range items {
				fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\n", it.ID, it.State, it.Priority, clip(it.Title, 60), strings.Join(it.Labels, ","))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(items) == 0 {
				filtered := ""
				if opt.State != "" || opt.Label != "" || opt.ParentID != "" || opt.Text != "" || opt.Cursor != "" {
					filtered = " match these filters"
				}
				fmt.Fprintf(s.Err, "no items in project %q%s\n", s.cfg.Project, filtered)
			}
			if next != nil {
				fmt.Fprintf(s.Err, "more items: --cursor %s, or --all\n", *next)
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opt.State, "state", "", "ready, leased, blocked, attention, done or cancelled")
	fl.StringVar(&opt.Label, "label", "", "only items with this label")
	fl.StringVar(&opt.ParentID, "parent", "", "only children of this item")
	fl.StringVar(&opt.Text, "text", "", "only items whose title or body contains this text (case-insensitive)")
	fl.StringVar(&opt.Sort, "sort", "created", "order: created (oldest first), -created (newest first), priority, -priority, updated, -updated")
	fl.IntVar(&opt.Limit, "limit", 0, "page size (default: the server's)")
	fl.StringVar(&opt.Cursor, "cursor", "", "continue after this cursor")
	fl.BoolVar(&all, "all", false, "fetch every page")
	refuseBlankFilters(cmd, "state", "label", "parent", "text", "sort", "cursor")
	return cmd
}

func itemsShowCmd(stdio IO, f *clientFlags) *cobra.Command {
	var history bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an item: body, state, what blocks it, result (and --history)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveID(ctx, kindItem, a[0])
			if err != nil {
				return err
			}
			it, err := s.api.GetItem(ctx, s.cfg.Project, id)
			if err != nil {
				return err
			}
			var leases []client.Lease
			if history {
				if leases, err = s.api.ItemLeases(ctx, s.cfg.Project, it.ID); err != nil {
					return err
				}
			}
			if s.json {
				if !history {
					return printJSON(s.Out, it)
				}
				return printJSON(s.Out, struct {
					*client.Item
					Leases []client.Lease `json:"leases"`
				}{it, leases})
			}
			printItem(s.Out, it)
			if history {
				fmt.Fprintln(s.Out, "\nleases:")
				printLeases(s.Out, leases)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&history, "history", false, "also list the item's leases")
	return cmd
}

func printItem(w io.Writer, it *client.Item) {
	t := newTable(w)
	fmt.Fprintf(t, "id\t%s\n", it.ID)
	fmt.Fprintf(t, "title\t%s\n", it.Title)
	fmt.Fprintf(t, "state\t%s\n", it.State)
	fmt.Fprintf(t, "priority\t%d\n", it.Priority)
	fmt.Fprintf(t, "epoch\t%d\n", it.Epoch)
	if it.PlanKey != nil {
		fmt.Fprintf(t, "plan key\t%s\n", *it.PlanKey)
	}
	if it.ParentID != nil {
		fmt.Fprintf(t, "parent\t%s\n", *it.ParentID)
	}
	if len(it.Labels) > 0 {
		fmt.Fprintf(t, "labels\t%s\n", strings.Join(it.Labels, ", "))
	}
	if len(it.Requires) > 0 {
		fmt.Fprintf(t, "requires\t%s\n", strings.Join(it.Requires, ", "))
	}
	if len(it.Touches) > 0 {
		fmt.Fprintf(t, "touches\t%s\n", strings.Join(it.Touches, ", "))
	}
	for _, h := range it.BlockedBy.Scopes {
		fmt.Fprintf(t, "scope held\t%s by %s (lease %s)\n", strings.Join(h.Scopes, ", "), h.Worker, h.LeaseID)
	}
	if it.OnExpiry != nil {
		fmt.Fprintf(t, "on expiry\t%s\n", *it.OnExpiry)
	}
	if it.PreviousWorker != nil {
		fmt.Fprintf(t, "previous worker\t%s\n", *it.PreviousWorker)
	}
	fmt.Fprintf(t, "created\t%s\nupdated\t%s\n", fmtTime(it.CreatedAt), fmtTime(it.UpdatedAt))
	if b := it.BlockedBy; !b.Empty() {
		for _, d := range b.Dependencies {
			fmt.Fprintf(t, "blocked by\tdependency %s %s\n", d.ID, refText(d))
		}
		for _, c := range b.Children {
			fmt.Fprintf(t, "blocked by\tchild %s %s\n", c.ID, refText(c))
		}
		for _, r := range b.Attention {
			fmt.Fprintf(t, "blocked by\tattention request %s %s\n", r.ID, clip(r.Question, 60))
		}
		if b.RetryAfter != nil {
			fmt.Fprintf(t, "blocked by\tretry backoff until %s\n", fmtTime(*b.RetryAfter))
		}
		if b.ReservedFor != nil {
			fmt.Fprintf(t, "blocked by\treserved for worker %s until %s\n", *b.ReservedFor, fmtTimePtr(b.ReservedUntil))
		}
		for _, r := range b.Budgets {
			fmt.Fprintf(t, "blocked by\tspent budget of %s %s (raise it: workgraph items budget %s ...)\n", r.ID, clip(r.Title, 60), r.ID[:8])
		}
	}
	if len(it.Result) > 0 && string(it.Result) != "null" {
		fmt.Fprintf(t, "result\t%s\n", clip(string(it.Result), 200))
	}
	t.Flush()
	if strings.TrimSpace(it.Body) != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(it.Body, "\n"))
	}
}

func refText(r client.ItemRef) string {
	return "(" + r.State + ") " + clip(r.Title, 60)
}

func itemsEditCmd(stdio IO, f *clientFlags) *cobra.Command {
	var (
		title, body string
		priority    int
		labels      []string
		requires    []string
		touches     []string
		version     int
		onExpiry    string
	)
	cmd := &cobra.Command{
		Use:   "edit ID",
		Short: "Edit an item's title, body, priority, labels or on_expiry",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, a []string) error {
			var req client.UpdateItemRequest
			if s.flagChanged("title") {
				req.Title = &title
			}
			if s.flagChanged("body") {
				req.Body = &body
			}
			if s.flagChanged("priority") {
				req.Priority = &priority
			}
			if s.flagChanged("labels") {
				req.Labels = &labels
			}
			if s.flagChanged("requires") {
				req.Requires = &requires
			}
			if s.flagChanged("touches") {
				req.Touches = &touches
			}
			if s.flagChanged("on-expiry") {
				if onExpiry == "default" {
					onExpiry = "" // sent as null: the project's default
				}
				req.OnExpiry = &onExpiry
			}
			if req == (client.UpdateItemRequest{}) {
				return usageError("nothing to change: give --title, --body, --priority, --labels, --requires, --touches or --on-expiry")
			}
			if s.flagChanged("version") {
				req.Version = &version
			}
			id, err := s.resolveID(ctx, kindItem, a[0])
			if err != nil {
				return err
			}
			it, err := s.api.UpdateItem(ctx, s.cfg.Project, id, req)
			if err != nil {
				return withHint(err, client.CodeConflict, "a done or cancelled item keeps its title, body, priority, requires, touches and on_expiry: "+
					"only its labels can still change; for more work, add a new item (workgraph items add)")
			}
			if s.json {
				return printJSON(s.Out, it)
			}
			fmt.Fprintf(s.Out, "item %s updated\n", it.ID)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&title, "title", "", "new title")
	fl.StringVar(&body, "body", "", "new body")
	fl.IntVar(&priority, "priority", 0, "new priority")
	fl.StringSliceVar(&labels, "labels", nil, "new labels, replacing the old ones (comma-separated; \"\" for none)")
	fl.StringSliceVar(&requires, "requires", nil, "new required capabilities, replacing the old ones (\"\" for none)")
	fl.StringSliceVar(&touches, "touches", nil, "new write scopes, replacing the old ones (\"\" for none)")
	fl.StringVar(&onExpiry, "on-expiry", "", onExpiryUsage+"; default: back to the project's")
	fl.IntVar(&version, "version", 0, "apply only if the item is still at this version (see items show --json)")
	return cmd
}

func itemsCancelCmd(stdio IO, f *clientFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel an item (an active lease on it ends as cancelled)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveID(ctx, kindItem, a[0])
			if err != nil {
				return err
			}
			it, err := s.api.CancelItem(ctx, s.cfg.Project, id, reason)
			if err != nil {
				return withHint(err, client.CodeConflict, "it has ended already, so there is nothing to cancel; `workgraph items show "+id+"` shows how it ended")
			}
			if s.json {
				return printJSON(s.Out, it)
			}
			fmt.Fprintf(s.Out, "item %s cancelled\n", it.ID)
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the item is cancelled")
	return cmd
}

func newDepsCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "deps",
		Short: "Add or remove dependencies (ITEM waits for DEPENDS_ON)",
	}
	addClientFlags(cmd, &f)
	cmd.AddCommand(&cobra.Command{
		Use:   "add ITEM DEPENDS_ON",
		Short: "Make ITEM wait until DEPENDS_ON is done (a cycle is refused, exit 6)",
		Args:  args(cobra.ExactArgs(2)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			a, err := s.resolveIDs(ctx, kindItem, a)
			if err != nil {
				return err
			}
			if err := s.api.AddDependency(ctx, s.cfg.Project, a[0], a[1]); err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]string{"item_id": a[0], "depends_on": a[1]})
			}
			fmt.Fprintf(s.Out, "%s now depends on %s\n", a[0], a[1])
			return nil
		}),
	}, &cobra.Command{
		Use:   "rm ITEM DEPENDS_ON",
		Short: "Remove the dependency of ITEM on DEPENDS_ON",
		Args:  args(cobra.ExactArgs(2)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			a, err := s.resolveIDs(ctx, kindItem, a)
			if err != nil {
				return err
			}
			if err := s.api.RemoveDependency(ctx, s.cfg.Project, a[0], a[1]); err != nil {
				return withHint(err, client.CodeNotFound, "the first item does not wait for the second (removed already, or never added), so there is nothing to remove; "+
					"`workgraph items show "+a[0]+"` shows what it still waits for")
			}
			if s.json {
				return printJSON(s.Out, map[string]string{"item_id": a[0], "removed": a[1]})
			}
			fmt.Fprintf(s.Out, "%s no longer depends on %s\n", a[0], a[1])
			return nil
		}),
	})
	return cmd
}
