package client

import (
	"context"
	"net/http"
)

// PlanItem is one item of a plan: Key is local to the plan, DependsOn names
// other keys of the same plan (or ids of existing items of the project),
// Children are created under this item. Line, when set, is the line of the
// plan file the item was read from; the server names it in its errors.
type PlanItem struct {
	Key       string     `json:"key"`
	Title     string     `json:"title"`
	Body      string     `json:"body,omitempty"`
	Priority  *int       `json:"priority,omitempty"`
	Labels    []string   `json:"labels,omitempty"`
	DependsOn []string   `json:"depends_on,omitempty"`
	Children  []PlanItem `json:"children,omitempty"`
	Line      int        `json:"line,omitempty"`
}

// PlanRequest is the body of POST /v1/projects/{p}/plans.
type PlanRequest struct {
	Items  []PlanItem `json:"items"`
	DryRun bool       `json:"dry_run,omitempty"`
}

// PlanResult is what a plan created (or, for a dry run, would create): the
// new items (id, title, state), the map from plan keys to item ids, and the
// keys that existed already.
type PlanResult struct {
	Items    []Ref                   `json:"items"`
	Keys     map[string]string       `json:"keys"`
	Existing map[string]ExistingItem `json:"existing,omitempty"`
	DryRun   bool                    `json:"dry_run,omitempty"`
}

// ExistingItem is a plan key that already existed in the project: the
// import left that item alone. Differs names the fields (title, body,
// priority, labels, parent) in which it differs from the plan.
type ExistingItem struct {
	ID      string   `json:"id"`
	Differs []string `json:"differs"`
}

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
