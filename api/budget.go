package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountBudgets(e *echo.Echo) {
	a.handle(e, http.MethodGet, "/projects/:project/items/:id/budget", a.getBudget, anyRole)
	a.handle(e, http.MethodPut, "/projects/:project/items/:id/budget", a.setBudget, people)
	a.handle(e, http.MethodGet, "/projects/:project/items/:id/cost", a.itemCost, anyRole)
}

// maxWallSeconds bounds a budget's wall time (lease.BudgetLimits).
const maxWallSeconds = 10 * 365 * 24 * 3600

// setBudget sets the budget of the item's subtree: 200 Budget. Raising a
// spent budget resolves its budget_exhausted request.
func (a *API) setBudget(c echo.Context) error {
	var req wire.BudgetRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	lim := lease.BudgetLimits{MaxTokens: req.MaxTokens, MaxCostUSD: req.MaxCostUSD, MaxDepth: req.MaxDepth}
	if req.MaxWallSeconds != nil {
		if *req.MaxWallSeconds < 1 || *req.MaxWallSeconds > maxWallSeconds {
			return wgerr.InvalidField("max_wall_seconds", "must be 1 to %d", maxWallSeconds)
		}
		d := time.Duration(*req.MaxWallSeconds) * time.Second
		lim.MaxWall = &d
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	b, err := a.svc.Leases.SetBudget(c.Request().Context(), p.ID, id, lim, principal(c).String())
	if err != nil {
		return renameFields(err, map[string]string{"max_wall": "max_wall_seconds"})
	}
	return c.JSON(http.StatusOK, budgetView(b))
}

func (a *API) getBudget(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	b, err := a.svc.Leases.Budget(c.Request().Context(), p.ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, budgetView(b))
}

// itemCost: what the item's own leases and its subtree spent, with its
// budget (null when it carries none).
func (a *API) itemCost(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := a.svc.Graph.Item(ctx, p.ID, id); err != nil {
		return err
	}
	u, err := a.svc.Leases.UsageOf(ctx, p.ID, id)
	if err != nil {
		return err
	}
	out := wire.ItemCost{ItemID: id.String(), Own: usageView(u.Own), Subtree: usageView(u.Subtree)}
	b, err := a.svc.Leases.Budget(ctx, p.ID, id)
	switch {
	case err == nil:
		v := budgetView(b)
		out.Budget = &v
	case wgerr.CodeOf(err) != wgerr.CodeNotFound:
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func usageView(u lease.Usage) wire.Usage {
	return wire.Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostUSD: u.CostUSD, ToolCalls: u.ToolCalls}
}

// usageOf is a reported usage (nil: none).
func usageOf(u *wire.Usage) lease.Usage {
	if u == nil {
		return lease.Usage{}
	}
	return lease.Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostUSD: u.CostUSD, ToolCalls: u.ToolCalls}
}

func budgetView(b lease.Budget) wire.Budget {
	out := wire.Budget{
		ItemID: b.ItemID.String(), MaxTokens: b.Limits.MaxTokens, MaxCostUSD: b.Limits.MaxCostUSD,
		MaxDepth: b.Limits.MaxDepth, StartedAt: b.StartedAt, Used: usageView(b.Used), Spent: b.Spent,
	}
	if b.Limits.MaxWall != nil {
		v := int64(*b.Limits.MaxWall / time.Second)
		out.MaxWallSeconds = &v
	}
	if b.RequestID != nil {
		v := b.RequestID.String()
		out.RequestID = &v
	}
	return out
}

func activityViews(acts []lease.Activity) []wire.LeaseActivity {
	out := make([]wire.LeaseActivity, len(acts))
	for i, a := range acts {
		out[i] = wire.LeaseActivity{
			LeaseID: a.LeaseID.String(), ItemID: a.ItemID.String(), Worker: a.Worker, Liveness: string(a.Liveness),
			LastActivity: a.LastActivity, HeartbeatAt: a.HeartbeatAt, ExpiresAt: a.ExpiresAt,
		}
	}
	return out
}
