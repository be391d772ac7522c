package client

import (
	"context"
	"net/http"
)

// ImportPlan creates every item of the plan and its dependencies in one
// transaction: all or nothing. A cycle is ErrDependencyCycle and an
// unknown key ErrInvalidArgument.
func (c *Client) ImportPlan(ctx context.Context, project string, req PlanRequest, opts ...CallOption) (*PlanResult, error) {
	var out PlanResult
	if _, err := c.do(ctx, http.MethodPost, "/v1/projects/"+esc(project)+"/plans", nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}
