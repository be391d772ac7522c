package client

import (
	"context"
	"net/http"
)

// SetBudget sets (or raises) the budget of an item's whole subtree. Raising
// a spent budget resolves its budget_exhausted request.
func (c *Client) SetBudget(ctx context.Context, project, item string, req BudgetRequest) (*Budget, error) {
	var out Budget
	if _, err := c.do(ctx, http.MethodPut, itemsPath(project)+"/"+esc(item)+"/budget", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetBudget returns an item's budget; ErrNotFound when it carries none.
func (c *Client) GetBudget(ctx context.Context, project, item string) (*Budget, error) {
	var out Budget
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(item)+"/budget", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ItemCost returns what an item's own leases and its whole subtree spent.
func (c *Client) ItemCost(ctx context.Context, project, item string) (*ItemCost, error) {
	var out ItemCost
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(item)+"/cost", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
