package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/clock"
)

// itemsBudgetCmd shows an item's cost (own and subtree) and budget, or
// sets the budget when a limit flag is given.
func itemsBudgetCmd(stdio IO, f *clientFlags) *cobra.Command {
	var (
		maxTokens, maxDepth int64
		maxCost             float64
		maxWall             time.Duration
	)
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "budget ID",
		Short: "Show an item's cost and budget, or set the budget of its subtree",
		Long: `Show an item's cost (its own leases and its whole subtree) and its budget,
or, with any --max-* flag, set the budget of its subtree: the flags given are
the budget's limits (a limit left out is no limit), so to raise one limit
give the others again.`,
		Example: `  workgraph items budget <item id>
  workgraph items budget <item id> --max-tokens 2000000 --max-cost-usd 25 --max-wall 4h --max-depth 2`,
		Args: args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, f, func(ctx context.Context, s *session, a []string) error {
			id, err := s.resolveID(ctx, kindItem, a[0])
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("max-tokens") || fl.Changed("max-cost-usd") || fl.Changed("max-wall") || fl.Changed("max-depth") {
				var req client.BudgetRequest
				if fl.Changed("max-tokens") {
					req.MaxTokens = &maxTokens
				}
				if fl.Changed("max-cost-usd") {
					req.MaxCostUSD = &maxCost
				}
				if fl.Changed("max-wall") {
					secs := int64(maxWall / time.Second)
					req.MaxWallSeconds = &secs
				}
				if fl.Changed("max-depth") {
					d := int(maxDepth)
					req.MaxDepth = &d
				}
				if _, err := s.api.SetBudget(ctx, s.cfg.Project, id, req); err != nil {
					return err
				}
			}
			cost, err := s.api.ItemCost(ctx, s.cfg.Project, id)
			if err != nil {
				return err
			}
			if s.json {
				return printJSON(s.Out, cost)
			}
			fmt.Fprintf(s.Out, "own:     %s\nsubtree: %s\n", usageText(cost.Own), usageText(cost.Subtree))
			b := cost.Budget
			if b == nil {
				fmt.Fprintln(s.Out, "budget:  none")
				return nil
			}
			state := "within"
			if b.Spent {
				state = "SPENT (its workers are told to stop; nothing under it is handed out)"
			}
			fmt.Fprintf(s.Out, "budget:  %s; %s\n", limitsText(b), state)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.Int64Var(&maxTokens, "max-tokens", 0, "tokens in + out for the whole subtree")
	fl.Float64Var(&maxCost, "max-cost-usd", 0, "dollars for the whole subtree")
	fl.DurationVar(&maxWall, "max-wall", 0, "wall time from when the budget is first set, e.g. 4h")
	fl.Int64Var(&maxDepth, "max-depth", 0, "how deep items may be created below the item (children are at 1)")
	return cmd
}

func usageText(u client.Usage) string {
	return fmt.Sprintf("%d tokens in, %d out, $%.4f, %d tool calls", u.TokensIn, u.TokensOut, u.CostUSD, u.ToolCalls)
}

func limitsText(b *client.Budget) string {
	out := ""
	add := func(s string) {
		if out != "" {
			out += ", "
		}
		out += s
	}
	if b.MaxTokens != nil {
		add(fmt.Sprintf("%d tokens", *b.MaxTokens))
	}
	if b.MaxCostUSD != nil {
		add(fmt.Sprintf("$%.2f", *b.MaxCostUSD))
	}
	if b.MaxWallSeconds != nil {
		add(clock.Typed(time.Duration(*b.MaxWallSeconds)*time.Second) + " wall time")
	}
	if b.MaxDepth != nil {
		add(fmt.Sprintf("depth %d", *b.MaxDepth))
	}
	if out == "" {
		out = "no limits"
	}
	return out
}

// usageFlag parses --usage: a JSON object of tokens_in, tokens_out,
// cost_usd, tool_calls (nil when empty). Another member is refused, not
// dropped: a misspelt "tokens_inn" would report no spend and say nothing.
func usageFlag(s string) (*client.Usage, error) {
	if s == "" {
		return nil, nil
	}
	var u client.Usage
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	err := dec.Decode(&u)
	if err == nil && dec.More() {
		err = errors.New("more after the object")
	}
	if err == nil && strings.TrimSpace(s) == "null" {
		err = errors.New("null is not an object")
	}
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--usage: want a JSON object of tokens_in, tokens_out, cost_usd, tool_calls: %w", err)}
	}
	return &u, nil
}
