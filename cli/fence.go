package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
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
		Short: "Print the server's public key that checks fence tokens (base64url Ed25519)",
		Long: `Print the deployment's public key, one line, base64url: give it to a
destination that checks fence tokens offline (fence.ParsePublicKey), or
let the destination fetch it from /.well-known/workgraph-fence-keys.
With --json, the whole keys document.`,
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
	cmd.AddCommand(key)
	return cmd
}
