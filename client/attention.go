package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// ListAttentionOptions filters GET /v1/projects/{p}/attention.
type ListAttentionOptions struct {
	// State is "open" (default on the server), "resolved" or "dismissed".
	State string
	// ItemID limits the list to one item's requests.
	ItemID string
	Limit  int
	Cursor string
}

// ListAttention lists the project's attention requests.
func (c *Client) ListAttention(ctx context.Context, project string, opt ListAttentionOptions) (*AttentionPage, error) {
	q := url.Values{}
	set(q, "state", opt.State)
	set(q, "item_id", opt.ItemID)
	set(q, "cursor", opt.Cursor)
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var page AttentionPage
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/attention", q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// Resolve answers an attention request (people only: an agent token gets
// ErrForbidden; an already resolved request is ErrConflict).
func (c *Client) Resolve(ctx context.Context, requestID, answer string) (*AttentionRequest, error) {
	var out AttentionRequest
	if _, err := c.do(ctx, http.MethodPost, "/v1/attention/"+esc(requestID)+"/resolve", nil,
		ResolveRequest{Answer: answer}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide resolves an uncertain_outcome request with a decision
// (DecisionRetry, DecisionDone with result, DecisionCancel) and an
// optional note (people only; a closed request is ErrConflict).
func (c *Client) Decide(ctx context.Context, requestID, decision string, result json.RawMessage, note string) (*AttentionRequest, error) {
	var out AttentionRequest
	if _, err := c.do(ctx, http.MethodPost, "/v1/attention/"+esc(requestID)+"/resolve", nil,
		ResolveRequest{Decision: decision, Result: result, Note: note}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetAttention returns one attention request.
func (c *Client) GetAttention(ctx context.Context, requestID string) (*AttentionRequest, error) {
	var out AttentionRequest
	if _, err := c.do(ctx, http.MethodGet, "/v1/attention/"+esc(requestID), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
