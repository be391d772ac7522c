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
// optional note (people only; a closed request is ErrConflict; DecisionDone
// on an item that waits for an unfinished dependency or an open child is
// ErrBlocked, and the request stays open).
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

// Dismiss closes an open attention request without an answer (people
// only); note, optional, says why. A blocking request's item is released
// as after an answer. An already closed request is ErrConflict.
func (c *Client) Dismiss(ctx context.Context, requestID, note string) (*AttentionRequest, error) {
	var out AttentionRequest
	if _, err := c.do(ctx, http.MethodPost, "/v1/attention/"+esc(requestID)+"/dismiss", nil,
		DismissRequest{Note: note}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Hold puts a person's hold on an open item (people only): a blocking
// request that keeps it from being claimed until it is resolved or
// dismissed; an active lease runs on. An empty question gets the
// server's standard text. A person holds an item once: when this token's
// person holds it already, that open hold is returned (nothing changes). A
// finished item is ErrConflict.
func (c *Client) Hold(ctx context.Context, project, itemID, question string) (*AttentionRequest, error) {
	var out AttentionRequest
	if _, err := c.do(ctx, http.MethodPost, itemsPath(project)+"/"+esc(itemID)+"/attention", nil,
		HoldRequest{Question: question}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ItemAttentionOptions pages GET /v1/projects/{p}/items/{id}/attention:
// Limit 0 is the server's default page size; Cursor is the NextCursor of
// the previous page ("": the item's first request).
type ItemAttentionOptions struct {
	Limit  int
	Cursor string
}

// ItemAttention returns one page of an item's attention requests, oldest
// first, open and closed; follow NextCursor (nil on the last page) for the
// rest. A claim carries only the item's latest requests (Claim.Attention;
// Claim.OlderAttention says that older ones exist).
func (c *Client) ItemAttention(ctx context.Context, project, itemID string, opt ItemAttentionOptions) (*AttentionPage, error) {
	q := url.Values{}
	set(q, "cursor", opt.Cursor)
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var out AttentionPage
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(itemID)+"/attention", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
