package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// CreateItem creates an item. A dependency that would close a cycle is
// ErrDependencyCycle.
func (c *Client) CreateItem(ctx context.Context, project string, req CreateItemRequest) (*Item, error) {
	var it Item
	if _, err := c.do(ctx, http.MethodPost, itemsPath(project), nil, req, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// GetItem returns one item. Unknown (or another project's): ErrNotFound.
func (c *Client) GetItem(ctx context.Context, project, id string) (*Item, error) {
	var it Item
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(id), nil, nil, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// ListItemsOptions filters GET /v1/projects/{p}/items.
type ListItemsOptions struct {
	State    string
	Label    string
	ParentID string
	// Text matches titles and bodies.
	Text string
	// Sort is created (the default), priority or updated, descending
	// with a leading "-" (e.g. "-created": newest first).
	Sort   string
	Limit  int
	Cursor string
}

// ListItems returns one page of the project's items.
func (c *Client) ListItems(ctx context.Context, project string, opt ListItemsOptions) (*ItemPage, error) {
	q := url.Values{}
	set(q, "state", opt.State)
	set(q, "label", opt.Label)
	set(q, "parent_id", opt.ParentID)
	set(q, "q", opt.Text)
	set(q, "sort", opt.Sort)
	set(q, "cursor", opt.Cursor)
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var page ItemPage
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project), q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// UpdateItem edits an item (people's edits; never pre-empts a lease).
func (c *Client) UpdateItem(ctx context.Context, project, id string, req UpdateItemRequest) (*Item, error) {
	var it Item
	if _, err := c.do(ctx, http.MethodPatch, itemsPath(project)+"/"+esc(id), nil, req, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// CancelItem cancels an item; an active lease on it ends as cancelled.
func (c *Client) CancelItem(ctx context.Context, project, id, reason string) (*Item, error) {
	var it Item
	if _, err := c.do(ctx, http.MethodPost, itemsPath(project)+"/"+esc(id)+"/cancel", nil, CancelRequest{Reason: reason}, &it); err != nil {
		return nil, err
	}
	return &it, nil
}

// AddDependency makes item id depend on dependsOn. A cycle is
// ErrDependencyCycle; the problem's extensions name it.
func (c *Client) AddDependency(ctx context.Context, project, id, dependsOn string) error {
	_, err := c.do(ctx, http.MethodPost, itemsPath(project)+"/"+esc(id)+"/dependencies", nil,
		AddDependencyRequest{DependsOn: dependsOn}, nil)
	return err
}

// RemoveDependency removes the edge "id depends on dependsOn".
func (c *Client) RemoveDependency(ctx context.Context, project, id, dependsOn string) error {
	_, err := c.do(ctx, http.MethodDelete, itemsPath(project)+"/"+esc(id)+"/dependencies/"+esc(dependsOn), nil, nil, nil)
	return err
}

// ItemGraph returns an item's neighbourhood: its dependencies,
// dependents, children and ancestors, and the critical path through it.
func (c *Client) ItemGraph(ctx context.Context, project, id string) (*ItemGraph, error) {
	var out ItemGraph
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(id)+"/graph", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GraphOptions bounds GET /v1/projects/{p}/graph.
type GraphOptions struct {
	// Around is an item id: only the items within Depth edges of it.
	Around string
	// Depth and Limit (the most nodes) are the server's defaults when 0.
	Depth int
	Limit int
}

// ProjectGraph returns the project's graph (or the part of it around an
// item) as nodes, edges and the critical path; Truncated says the limit
// cut it.
func (c *Client) ProjectGraph(ctx context.Context, project string, opt GraphOptions) (*Subgraph, error) {
	q := url.Values{}
	set(q, "around", opt.Around)
	if opt.Depth > 0 {
		q.Set("depth", strconv.Itoa(opt.Depth))
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var out Subgraph
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/graph", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func itemsPath(project string) string { return "/v1/projects/" + esc(project) + "/items" }

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
