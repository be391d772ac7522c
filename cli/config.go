package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newConfigCmd) }

func newConfigCmd(stdio IO) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the client configuration in effect and where each value comes from",
		Long: `Show the client configuration in effect. Each setting is taken from, in
order: a flag (--url, --token, --project, --retries), the environment
(WORKGRAPH_URL, WORKGRAPH_TOKEN, WORKGRAPH_PROJECT, WORKGRAPH_WORKER,
WORKGRAPH_RETRIES), the config file
(--config, WORKGRAPH_CONFIG, else ~/.config/workgraph/config.yaml or
config.json), then the defaults. The file:

  url: http://127.0.0.1:8080
  token: wg_...
  project: default
  worker: laptop-1
  retries: 9

retries is how many times a request is tried again while the server is
unreachable, unavailable or rate limiting (0: never).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(f, os.Getenv)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			token := "(none)"
			if n := len(cfg.Token); n > 0 {
				token = cfg.Token[:min(4, n)] + "…"
			}
			if f.json {
				return printJSON(stdio.Out, map[string]any{
					"url": cfg.URL, "project": cfg.Project, "worker": cfg.Worker, "retries": cfg.Retries, "token_set": cfg.Token != "",
					"file": cfg.File, "sources": cfg.Source,
				})
			}
			t := newTable(stdio.Out)
			fmt.Fprintln(t, "SETTING\tVALUE\tFROM")
			fmt.Fprintf(t, "url\t%s\t%s\n", cfg.URL, cfg.Source["url"])
			fmt.Fprintf(t, "token\t%s\t%s\n", token, cfg.Source["token"])
			fmt.Fprintf(t, "project\t%s\t%s\n", cfg.Project, cfg.Source["project"])
			fmt.Fprintf(t, "worker\t%s\t%s\n", cfg.Worker, cfg.Source["worker"])
			fmt.Fprintf(t, "retries\t%d\t%s\n", cfg.Retries, cfg.Source["retries"])
			fmt.Fprintf(t, "config file\t%s\t\n", orDash(cfg.File))
			return t.Flush()
		},
	}
	addClientFlags(cmd, &f)
	return cmd
}
