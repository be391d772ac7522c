package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/buildinfo"
)

func init() { extraCommands = append(extraCommands, newVersionCmd) }

// newVersionCmd prints the build: version, commit, build date, toolchain
// (what a bug report needs). `workgraph --version` prints the same.
func newVersionCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info := buildinfo.Get()
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			_, err := fmt.Fprint(stdio.Out, info.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// setVersion makes `workgraph --version` print what `workgraph version`
// does.
func setVersion(root *cobra.Command) {
	root.Version = buildinfo.Get().Version
	root.SetVersionTemplate(buildinfo.Get().String())
}
