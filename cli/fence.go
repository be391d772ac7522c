package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/fencekey"
)

func init() { extraCommands = append(extraCommands, newFenceCmd) }

func newFenceCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "fence",
		Short: "Fence tokens for the systems your work changes (docs/agents.md)",
		Args:  args(cobra.NoArgs),
	}
	key := &cobra.Command{
		Use:   "key",
		Short: "Print the server's public keys that check fence tokens (base64url Ed25519)",
		Long: `Print the deployment's public keys, one a line, base64url, the signing
key first (after a rotation, the keys it replaced follow while their grace
lasts): give them to a destination that checks fence tokens offline
(fence.ParsePublicKey), or better let the destination follow
/.well-known/workgraph-fence-keys (fence.KeySet), so that a rotation
needs no change there. With --json, the whole keys document.`,
		Args: args(cobra.NoArgs),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, _ []string) error {
			ks, err := s.api.FenceKeys(ctx)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, ks)
			}
			for _, k := range ks.Keys {
				fmt.Fprintln(s.Out, k.PublicKey)
			}
			return nil
		}),
	}
	addClientFlags(key, &f)
	var (
		url, dataDir string
		grace        time.Duration
	)
	rotate := &cobra.Command{
		Use:   "rotate [--grace 24h]",
		Short: "Rotate the deployment's fence signing key, straight in the database (operators)",
		Long: `Add a new fence signing key: every server signs with it within ` + fencekey.RefreshInterval.String() + `.
The keys it replaces stay published at /.well-known/workgraph-fence-keys
for --grace, so the tokens they signed for leases granted before still
verify; a destination that follows the keys document (fence.KeySet)
fetches the new key when a token first names it. --grace 0 retires the old
keys at once (a key that leaked): the tokens they signed are refused from
then on, so their workers must claim again.
The database is migrated first, as for "workgraph token create".`,
		Example: `  workgraph fence rotate                 # the old key is published for another 24 hours
  workgraph fence rotate --grace 0       # the old key leaked: refuse its tokens now`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 || grace > fencekey.MaxGrace {
				return usageError("--grace %s: want 0 to %s", grace, fencekey.MaxGrace)
			}
			ctx := cmd.Context()
			return withPool(ctx, url, dataDir, func(pool *pgxpool.Pool) error {
				if err := db.Migrate(ctx, pool, nil); err != nil {
					return err
				}
				if _, err := fencekey.Load(ctx, pool); err != nil { // a first key, on a database no server has used
					return err
				}
				kid, err := fencekey.Rotate(ctx, pool, grace)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdio.Out, "new fence key %s; servers sign with it within %s; the keys it replaces stay published for %s\n",
					kid, fencekey.RefreshInterval, grace)
				return nil
			})
		},
	}
	addDatabaseFlags(rotate, &url, &dataDir)
	rotate.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the replaced keys stay published (0: retired at once; at most 168h)")
	cmd.AddCommand(key, rotate)
	return cmd
}
