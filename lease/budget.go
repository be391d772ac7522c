package lease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Usage is what a worker reports having spent on a lease so far. Each
// figure is monotonic per lease: a report lower than the stored one is
// ignored (reports may arrive out of order, and a retried heartbeat may
// repeat an older one), so the stored usage is the largest reported and
// the last report of a growing counter wins. CostUSD is kept to the
// micro-dollar.
type Usage struct {
	TokensIn  int64
	TokensOut int64
	CostUSD   float64
	ToolCalls int64
}

// maxUsage bounds each usage figure (and CostUSD in dollars).
const maxUsage = 1 << 50

// Check refuses negative, non-finite or absurd figures.
func (u Usage) Check(field string) error {
	if u.TokensIn < 0 || u.TokensOut < 0 || u.ToolCalls < 0 || u.TokensIn > maxUsage ||
		u.TokensOut > maxUsage || u.ToolCalls > maxUsage {
		return wgerr.InvalidField(field, "tokens_in, tokens_out and tool_calls must be 0 to %d", int64(maxUsage))
	}
	if math.IsNaN(u.CostUSD) || u.CostUSD < 0 || u.CostUSD > 1e9 {
		return wgerr.InvalidField(field, "cost_usd must be 0 to 1e9")
	}
	return nil
}

// IsZero reports whether u reports nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// Tokens is TokensIn + TokensOut, what a token budget counts.
func (u Usage) Tokens() int64 { return u.TokensIn + u.TokensOut }

func (u Usage) costMicro() int64 { return int64(math.Round(u.CostUSD * 1e6)) }

func usageOf(in, out, micro, calls int64) Usage {
	return Usage{TokensIn: in, TokensOut: out, CostUSD: float64(micro) / 1e6, ToolCalls: calls}
}

// BudgetLimits bound an item's whole subtree; a nil limit is no limit.
// MaxTokens counts tokens in and out; MaxWall runs from when the budget was
// first set; MaxDepth bounds how deep items may be created below the item:
// its children are at depth 1, and any new item deeper than MaxDepth (an
// item created with a parent, a plan's, a decomposition's child) is
// refused (depth_limit, the graph's rule: see graph.CreateItem).
type BudgetLimits struct {
	MaxTokens  *int64
	MaxCostUSD *float64
	MaxWall    *time.Duration
	MaxDepth   *int
}

// Budget is an item's budget and its ledger: the usage of every lease of
// every item of its subtree. Spent is judged by the database clock.
// RequestID is the budget_exhausted request opened when it was spent.
type Budget struct {
	ItemID    uuid.UUID
	Limits    BudgetLimits
	StartedAt time.Time
	UpdatedAt time.Time
	Used      Usage
	Spent     bool
	RequestID *uuid.UUID
}

// ItemUsage is the usage of an item's own leases and of its whole subtree
// (itself included).
type ItemUsage struct {
	Own     Usage
	Subtree Usage
}

func (lim BudgetLimits) check() error {
	if lim.MaxTokens != nil && (*lim.MaxTokens < 0 || *lim.MaxTokens > maxUsage) {
		return wgerr.InvalidField("max_tokens", "must be 0 to %d", int64(maxUsage))
	}
	if lim.MaxCostUSD != nil && (math.IsNaN(*lim.MaxCostUSD) || *lim.MaxCostUSD < 0 || *lim.MaxCostUSD > 1e9) {
		return wgerr.InvalidField("max_cost_usd", "must be 0 to 1e9")
	}
	if lim.MaxCostUSD != nil && *lim.MaxCostUSD > 0 && math.Round(*lim.MaxCostUSD*1e6) == 0 {
		// Kept to the micro-dollar, it would be stored as 0: a budget
		// that is spent at once, not the small one asked for.
		return wgerr.InvalidField("max_cost_usd", "is %g; costs are kept to the micro-dollar, so a positive limit must be at least 0.0000005 (0 allows no cost)", *lim.MaxCostUSD)
	}
	if lim.MaxWall != nil && (*lim.MaxWall < time.Second || *lim.MaxWall > 10*365*24*time.Hour) {
		return wgerr.InvalidField("max_wall", "must be 1 s to 10 years")
	}
	if lim.MaxDepth != nil && (*lim.MaxDepth < 0 || *lim.MaxDepth > 1000) {
		return wgerr.InvalidField("max_depth", "must be 0 to 1000")
	}
	return nil
}

// SetBudget sets (or changes) the budget of the item's subtree, in one
// transaction. A new budget puts every item and live lease of the subtree
// under it and fills its ledger with their past usage. When the budget is
// spent and has no request, a blocking system request of reason
// budget_exhausted is opened on the item; when it is no longer spent (the
// limits were raised), its open request is resolved and the subtree's
// work continues.
//
// Errors: invalid_argument (a limit); not_found (item).
func (s *Service) SetBudget(ctx context.Context, project, item uuid.UUID, lim BudgetLimits, by string) (Budget, error) {
	if err := lim.check(); err != nil {
		return Budget{}, err
	}
	q := dbq.New()
	var out Budget
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		if _, err := q.LockBudgetItem(ctx, tx, dbq.LockBudgetItemParams{ProjectID: project, ItemID: item}); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return wgerr.New(wgerr.CodeNotFound, "item %s not found", item)
			}
			return err
		}
		p := dbq.UpsertBudgetParams{ProjectID: project, ItemID: item, Now: s.clock.Now(), MaxTokens: lim.MaxTokens}
		if lim.MaxCostUSD != nil {
			v := int64(math.Round(*lim.MaxCostUSD * 1e6))
			p.MaxCostMicroUsd = &v
		}
		if lim.MaxWall != nil {
			v := lim.MaxWall.Milliseconds()
			p.MaxWallMs = &v
		}
		if lim.MaxDepth != nil {
			v := int32(*lim.MaxDepth)
			p.MaxDepth = &v
		}
		inserted, err := q.UpsertBudget(ctx, tx, p)
		if err != nil {
			return err
		}
		if inserted {
			// Items first (waiting for the claims that hold them), then
			// their live leases, then the sums: each statement sees what
			// the one before it waited for.
			// Until a pass changes nothing: a child created under an item
			// before this transaction held it (its creator holds the parent
			// while it inserts) was not in the previous pass's snapshot, and
			// it may have children of its own. Once every item of the
			// subtree is held here, a new child waits for this transaction
			// and inherits the budget from its parent's row.
			root := dbq.AddBudgetRootToItemsParams{ProjectID: project, ItemID: item}
			for {
				n, err := q.AddBudgetRootToItems(ctx, tx, root)
				if err != nil {
					return err
				}
				if n == 0 {
					break
				}
			}
			if err := q.AddBudgetRootToLeases(ctx, tx, dbq.AddBudgetRootToLeasesParams{ProjectID: project, ItemID: item}); err != nil {
				return err
			}
			if err := q.FillBudget(ctx, tx, dbq.FillBudgetParams{ProjectID: project, ItemID: item}); err != nil {
				return err
			}
		}
		if err := s.settleBudget(ctx, tx, project, item, by); err != nil {
			return err
		}
		out, err = s.budgetOn(ctx, tx, project, item)
		return err
	})
	return out, err
}

// Budget returns the item's budget.
//
// Errors: not_found (the item carries no budget).
func (s *Service) Budget(ctx context.Context, project, item uuid.UUID) (Budget, error) {
	return s.budgetOn(ctx, s.exec, project, item)
}

func (s *Service) budgetOn(ctx context.Context, exec db.Executor, project, item uuid.UUID) (Budget, error) {
	row, err := dbq.New().GetBudget(ctx, exec, dbq.GetBudgetParams{ProjectID: project, ItemID: item, Now: s.clock.Now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Budget{}, wgerr.New(wgerr.CodeNotFound, "item %s has no budget", item)
	}
	if err != nil {
		return Budget{}, db.Translate(err)
	}
	return budgetOf(row.Budget, row.Spent), nil
}

func budgetOf(b dbq.Budget, spent bool) Budget {
	out := Budget{
		ItemID: b.ItemID, StartedAt: b.StartedAt, UpdatedAt: b.UpdatedAt, Spent: spent, RequestID: b.RequestID,
		Used:   usageOf(b.TokensIn, b.TokensOut, b.CostMicroUsd, b.ToolCalls),
		Limits: BudgetLimits{MaxTokens: b.MaxTokens},
	}
	if b.MaxCostMicroUsd != nil {
		v := float64(*b.MaxCostMicroUsd) / 1e6
		out.Limits.MaxCostUSD = &v
	}
	if b.MaxWallMs != nil {
		v := time.Duration(*b.MaxWallMs) * time.Millisecond
		out.Limits.MaxWall = &v
	}
	if b.MaxDepth != nil {
		v := int(*b.MaxDepth)
		out.Limits.MaxDepth = &v
	}
	return out
}

// settleBudget makes the budget's request follow its state: a spent budget
// without a request gets one; a budget no longer spent has its request
// resolved (if still open) and forgotten, so a later spending opens a new
// one.
func (s *Service) settleBudget(ctx context.Context, tx pgx.Tx, project, item uuid.UUID, by string) error {
	b, err := s.budgetOn(ctx, tx, project, item)
	if err != nil {
		return err
	}
	switch {
	case b.Spent && b.RequestID == nil:
		return s.openBudgetRequest(ctx, tx, project, item)
	case !b.Spent && b.RequestID != nil:
		// Forget the request first: attention refuses to close a request
		// that a budget still waits on.
		if err := dbq.New().SetBudgetRequest(ctx, tx, dbq.SetBudgetRequestParams{ProjectID: project, ItemID: item}); err != nil {
			return err
		}
		_, err := s.attentionOn(tx).Resolve(ctx, project, *b.RequestID, "budget raised", by)
		if err != nil && wgerr.CodeOf(err) != wgerr.CodeConflict {
			return err
		}
	}
	return nil
}

// checkBudgets says whether any of the budgets over a lease is spent, and
// opens the budget_exhausted request of each spent one that has none. It
// costs one statement when nothing is spent; leases under no budget never
// call it.
func (s *Service) checkBudgets(ctx context.Context, project uuid.UUID, roots []uuid.UUID) (bool, error) {
	spent, err := dbq.New().SpentBudgets(ctx, s.exec, dbq.SpentBudgetsParams{ProjectID: project, Roots: roots, Now: s.clock.Now()})
	if err != nil || len(spent) == 0 {
		return false, err
	}
	for _, b := range spent {
		if b.RequestID != nil {
			continue
		}
		err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
			return s.openBudgetRequest(ctx, tx, project, b.ItemID)
		})
		if err != nil {
			return true, err
		}
	}
	return true, nil
}

// AskSpentBudgets opens the budget_exhausted request of up to limit spent
// budgets that have none, each in a transaction of its own project: a
// budget whose wall time ran out, or one spent when no lease under it was
// live to notice, still asks a person. The sweeper calls it.
func (s *Service) AskSpentBudgets(ctx context.Context, limit int) error {
	rows, err := dbq.New().UnaskedSpentBudgets(ctx, s.exec, dbq.UnaskedSpentBudgetsParams{Now: s.clock.Now(), MaxBudgets: int32(limit)})
	if err != nil {
		return err
	}
	for _, r := range rows {
		err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
			return s.openBudgetRequest(ctx, tx, r.ProjectID, r.ItemID)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// openBudgetRequest opens the one budget_exhausted request of a spent
// budget: the budget's row is locked while it has no request, so of two
// transactions crossing the budget at once the second finds the first's
// request and opens none.
func (s *Service) openBudgetRequest(ctx context.Context, tx pgx.Tx, project, item uuid.UUID) error {
	q := dbq.New()
	b, err := q.LockSpentBudgetUnasked(ctx, tx, dbq.LockSpentBudgetUnaskedParams{ProjectID: project, ItemID: item, Now: s.clock.Now()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	used := usageOf(b.TokensIn, b.TokensOut, b.CostMicroUsd, 0)
	reached, said := reachedLimits(b)
	req, err := s.attentionOn(tx).Open(ctx, project, item, attention.NewRequest{
		Question: fmt.Sprintf("The budget of this item's subtree is spent: %s (%d tokens, $%s so far). "+
			"Its workers were told to stop and nothing under it is handed out. Raise the budget "+
			"(on the item page, with `workgraph items budget`, or PUT /v1/projects/{project}/items/{id}/budget) "+
			"to let the work continue, or cancel the item.",
			strings.Join(said, "; "), used.Tokens(), dollars(b.CostMicroUsd)),
		Context: mustJSON(map[string]any{"budget": map[string]any{
			"item_id":            item,
			"max_tokens":         b.MaxTokens,
			"max_cost_micro_usd": b.MaxCostMicroUsd,
			"max_wall_ms":        b.MaxWallMs,
			"tokens":             used.Tokens(),
			"cost_usd":           used.CostUSD,
			"reached":            reached,
		}}),
		Blocking:    true,
		Source:      attention.SourceSystem,
		Reason:      attention.ReasonBudgetExhausted,
		RequestedBy: "system",
	})
	if wgerr.CodeOf(err) == wgerr.CodeConflict {
		// The budget's item is finished (a leaf whose completion spent
		// it): there is nothing left under it to stop.
		return nil
	}
	if err != nil {
		return err
	}
	return q.SetBudgetRequest(ctx, tx, dbq.SetBudgetRequestParams{ProjectID: project, ItemID: item, RequestID: &req.ID})
}

// reachedLimits names the limits a spent budget has reached, as the
// budget's PUT names them (max_tokens, max_cost_usd, max_wall_seconds),
// and says each for a person.
func reachedLimits(b dbq.LockSpentBudgetUnaskedRow) (names, said []string) {
	if b.MaxTokens != nil && b.TokensIn+b.TokensOut >= *b.MaxTokens {
		names = append(names, "max_tokens")
		said = append(said, fmt.Sprintf("%d tokens of the %d allowed", b.TokensIn+b.TokensOut, *b.MaxTokens))
	}
	if b.MaxCostMicroUsd != nil && b.CostMicroUsd >= *b.MaxCostMicroUsd {
		names = append(names, "max_cost_usd")
		said = append(said, fmt.Sprintf("$%s of the $%s allowed", dollars(b.CostMicroUsd), dollars(*b.MaxCostMicroUsd)))
	}
	if b.WallRanOut && b.MaxWallMs != nil {
		names = append(names, "max_wall_seconds")
		said = append(said, fmt.Sprintf("its wall time of %s has run out", time.Duration(*b.MaxWallMs)*time.Millisecond))
	}
	return names, said
}

// dollars writes micro-dollars as dollars, without trailing zeros.
func dollars(micro int64) string {
	return strconv.FormatFloat(float64(micro)/1e6, 'f', -1, 64)
}

// UsageOf returns the usage of the item's own leases and of its subtree.
func (s *Service) UsageOf(ctx context.Context, project, item uuid.UUID) (ItemUsage, error) {
	r, err := dbq.New().ItemUsage(ctx, s.exec, dbq.ItemUsageParams{ProjectID: project, ItemID: item})
	if err != nil {
		return ItemUsage{}, db.Translate(err)
	}
	return ItemUsage{
		Own:     usageOf(r.OwnTokensIn, r.OwnTokensOut, r.OwnCostMicroUsd, r.OwnToolCalls),
		Subtree: usageOf(r.TokensIn, r.TokensOut, r.CostMicroUsd, r.ToolCalls),
	}, nil
}

// WorkerUsage returns the usage reported under each worker label of the
// project (labels that reported none are absent).
func (s *Service) WorkerUsage(ctx context.Context, project uuid.UUID) (map[string]Usage, error) {
	rows, err := dbq.New().WorkerUsage(ctx, s.exec, project)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make(map[string]Usage, len(rows))
	for _, r := range rows {
		out[r.Worker] = usageOf(r.TokensIn, r.TokensOut, r.CostMicroUsd, r.ToolCalls)
	}
	return out, nil
}
