package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
)

func init() { extraCommands = append(extraCommands, newProjectsCmd, newTokensCmd) }

func newProjectsCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "projects",
		Short: "List, create or set up projects (admin)",
		Args:  args(cobra.NoArgs),
	}
	addClientFlags(cmd, &f)
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the projects this token can see",
		Args:    args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			ps, err := s.api.ListProjects(ctx)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]any{"projects": ps})
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "NAME\tID\tCREATED")
			for _, p := range ps {
				fmt.Fprintf(t, "%s\t%s\t%s\n", p.Name, p.ID, fmtTime(p.CreatedAt))
			}
			return t.Flush()
		}),
	}
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a project (lower-case letters, digits, - and _)",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			p, err := s.api.CreateProject(ctx, a[0])
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, p)
			}
			fmt.Fprintf(s.Out, "created project %s (%s)\nnext: workgraph tokens create --project %s --role agent NAME\n", p.Name, p.ID, p.Name)
			return nil
		}),
	}
	var onExpiry string
	set := &cobra.Command{
		Use:     "set NAME --on-expiry retry|reconcile",
		Short:   "Change a project's settings: the default on_expiry of its items",
		Example: `  workgraph projects set website --on-expiry reconcile   # expired leases wait for a person's decision`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			if !s.flagChanged("on-expiry") {
				return usageError("nothing to change: give --on-expiry retry|reconcile")
			}
			if onExpiry != client.OnExpiryRetry && onExpiry != client.OnExpiryReconcile {
				return usageError("--on-expiry %q: want retry or reconcile", onExpiry)
			}
			p, err := s.api.UpdateProject(ctx, a[0], client.UpdateProjectRequest{OnExpiry: onExpiry})
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, p)
			}
			fmt.Fprintf(s.Out, "project %s: on_expiry %s (for its items that name none)\n", p.Name, p.OnExpiry)
			return nil
		}),
	}
	set.Flags().StringVar(&onExpiry, "on-expiry", "", onExpiryUsage)
	cmd.RunE = ls.RunE
	cmd.AddCommand(ls, create, set)
	return cmd
}

func newTokensCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "List, create and revoke a project's API tokens over the API (admin token; in the database: token)",
		Long: `List, create and revoke a project's API tokens over the API (admin token).
To mint a token directly in the database (e.g. the first one), use
` + "`workgraph token create`" + ` on the server's machine.`,
	}
	addClientFlags(cmd, &f)
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the project's tokens (never their secrets)",
		Args:    args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			ts, err := s.api.ListTokens(ctx, s.cfg.Project)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]any{"tokens": ts})
			}
			t := newTable(s.Out)
			fmt.Fprintln(t, "ID\tNAME\tROLE\tCREATED\tREVOKED")
			for _, tk := range ts {
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", tk.ID, tk.Name, tk.Role, fmtTime(tk.CreatedAt), fmtTimePtr(tk.RevokedAt))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if len(ts) == 0 {
				fmt.Fprintf(s.Err, "no tokens in project %q; create one with `workgraph tokens create NAME --role agent`\n", s.cfg.Project)
			}
			return nil
		}),
	}
	var role, name string
	create := &cobra.Command{
		Use:   "create [NAME] [--role agent|human|admin]",
		Short: "Create a token over the API; its secret is printed once (name as argument or --name)",
		Args:  args(cobra.MaximumNArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			if len(a) == 1 {
				if name != "" && name != a[0] {
					return usageError("give the name once (argument or --name)")
				}
				name = a[0]
			}
			if name == "" {
				return usageError("the token's name is required (argument or --name)")
			}
			tk, err := s.api.CreateToken(ctx, s.cfg.Project, client.CreateTokenRequest{Name: name, Role: role})
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, tk)
			}
			fmt.Fprintf(s.Out, "%s\n", tk.Secret)
			fmt.Fprintf(s.Err, "created %s token %q (id %s) in project %s; the secret above is shown only once\n", tk.Role, tk.Name, tk.ID, s.cfg.Project)
			return nil
		}),
	}
	create.Flags().StringVar(&role, "role", "agent", "agent, human or admin")
	create.Flags().StringVar(&name, "name", "", "the token's name (or give it as the argument), unique in the project")
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token at once",
		Args:  args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveID(ctx, kindToken, a[0])
			if err != nil {
				return err
			}
			if err := s.api.RevokeToken(ctx, s.cfg.Project, id); err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, map[string]string{"revoked": id})
			}
			fmt.Fprintf(s.Out, "token %s revoked\n", id)
			return nil
		}),
	}
	cmd.AddCommand(ls, create, revoke)
	return cmd
}
