package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func init() { extraCommands = append(extraCommands, newTokenCmd) }

// newTokenCmd is the operator's "token" command: it talks to the database
// directly (like migrate), so it works before any token exists.
func newTokenCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Mint API tokens straight in the database, no server needed (operators; over the API: tokens)",
	}
	cmd.AddCommand(newTokenCreateCmd(stdio))
	return cmd
}

func newTokenCreateCmd(stdio IO) *cobra.Command {
	var (
		url, dataDir, project, name, role string
		asJSON                            bool
	)
	cmd := &cobra.Command{
		Use:   "create [NAME] --role admin|human|agent [--project NAME|ID]",
		Short: "Mint a token and print it once (it is stored only as a hash)",
		Long: `Mint an API token directly in the database and print it once.

The token is printed on stdout and never shown again: the database keeps only
its SHA-256 hash. Human and agent tokens belong to one project (--project, a
name or an id); an admin token may belong to none. The database is migrated
first, so this works before the server has ever run. The name is given as
the argument or with --name, like "workgraph tokens create", which does the
same over the API with an admin token.`,
		Example: `  workgraph token create --project default --name ci-agent --role agent
  WORKGRAPH_TOKEN=$(workgraph token create --name ops --role admin)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if name != "" && name != args[0] {
					return &exitError{code: ExitUsage, err: fmt.Errorf("token create: give the name once (argument or --name)")}
				}
				name = args[0]
			}
			if name == "" {
				return &exitError{code: ExitUsage, err: fmt.Errorf("token create: the token's name is required (argument or --name)")}
			}
			r := auth.Role(role)
			if !r.Valid() {
				return &exitError{code: ExitUsage, err: fmt.Errorf("token create: --role must be admin, human or agent, got %q", role)}
			}
			if r != auth.RoleAdmin && project == "" {
				return &exitError{code: ExitUsage, err: fmt.Errorf("token create: %s %s token needs --project", article(role), role)}
			}
			ctx := cmd.Context()
			return withPoolAt(ctx, url, dataDir, func(pool *pgxpool.Pool, where string) error {
				if err := db.Migrate(ctx, pool, nil); err != nil {
					return err
				}
				var projectID *uuid.UUID
				if project != "" {
					p, err := graph.NewService(pool, nil).Project(ctx, project)
					if errors.Is(err, wgerr.NotFound) {
						return &exitError{code: ExitNotFound, err: projectNotFoundIn(ctx, pool, project, where)}
					}
					if err != nil {
						return err
					}
					projectID = &p.ID
				}
				tok, bearer, err := auth.NewService(pool, nil).Create(ctx, projectID, name, r)
				if errors.Is(err, wgerr.AlreadyExists) {
					// As `tokens create` over the API: a duplicate is exit 6.
					return &exitError{code: ExitConflict, err: err}
				}
				if err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(stdio.Out).Encode(map[string]any{
						"token": bearer, "id": tok.ID, "name": tok.Name, "role": tok.Role, "project_id": tok.ProjectID,
					})
				}
				fmt.Fprintln(stdio.Out, bearer)
				fmt.Fprintf(stdio.Err, "created %s token %q (id %s); it is shown only this once\n", tok.Role, tok.Name, tok.ID)
				return nil
			})
		},
	}
	addDatabaseFlags(cmd, &url, &dataDir)
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "project name or id the token belongs to (required unless --role admin)")
	f.StringVar(&name, "name", "", "name of the token, recorded as the principal \"token:<name>\"")
	f.StringVar(&role, "role", "agent", "admin, human or agent")
	f.BoolVar(&asJSON, "json", false, "print {token, id, name, role, project_id} as JSON")
	return cmd
}

// projectNotFoundIn says that no project named project is in the database
// where (withPoolAt's words), which projects are, and that a server keeps
// its projects in the database of its own --data-dir or --database-url: a
// token create that opens another one (the default data folder, say) finds
// none of the server's projects.
func projectNotFoundIn(ctx context.Context, pool *pgxpool.Pool, project, where string) error {
	names := "none"
	if ps, err := graph.NewService(pool, nil).ListProjects(ctx); err == nil && len(ps) > 0 {
		list := make([]string, len(ps))
		for i, p := range ps {
			list[i] = p.Name
		}
		names = strings.Join(list, " ")
	}
	return fmt.Errorf("token create: project %q not found in %s (projects there: %s)\n"+
		"  a server keeps its projects in the database of its own --data-dir or --database-url: give token create the same, "+
		"or create the token over the API (workgraph tokens create NAME --project %s, with an admin token)", project, where, names, project)
}

// article is "an" before a word that starts with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
