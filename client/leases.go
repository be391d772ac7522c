package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Claim takes the highest-priority ready item of the project, waiting up to
// req.WaitSeconds for one. Nothing ready: (nil, ErrNothingReady).
func (c *Client) Claim(ctx context.Context, project string, req ClaimRequest) (*Claim, error) {
	req.MaxItems = 0 // one lease, answered alone (ClaimBatch asks for more)
	var cl Claim
	status, err := c.do(ctx, http.MethodPost, "/v1/projects/"+esc(project)+"/claims", nil, req, &cl,
		withExtraTimeout(time.Duration(req.WaitSeconds)*time.Second))
	if err != nil {
		return nil, err
	}
	if status == http.StatusNoContent {
		return nil, ErrNothingReady
	}
	return &cl, nil
}

// Heartbeat extends the lease. A lease that ended or expired is
// ErrLeaseLost: stop working on the item.
func (c *Client) Heartbeat(ctx context.Context, leaseID string, req HeartbeatRequest) (*Heartbeat, error) {
	var hb Heartbeat
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, "heartbeat"), nil, req, &hb, selfIdempotent()); err != nil {
		return nil, err
	}
	return &hb, nil
}

// Complete finishes the item with result. ErrLeaseLost when the lease is
// gone; ErrConflictingResult when it was completed with another result;
// ErrBlocked when the item gained a dependency or an open child while it
// was leased (nothing changed, the lease is still held).
func (c *Client) Complete(ctx context.Context, leaseID string, req CompleteRequest) (*Completion, error) {
	if req.Result == nil {
		req.Result = json.RawMessage("null")
	}
	return leaseCall[Completion](ctx, c, leaseID, "complete", req, selfIdempotent())
}

// Release gives the item back to circulation.
func (c *Client) Release(ctx context.Context, leaseID string, req ReleaseRequest) (*LeaseItem, error) {
	return leaseCall[LeaseItem](ctx, c, leaseID, "release", req)
}

// Fail reports the attempt failed; the item returns to circulation after a
// backoff (or waits for a person after repeated failures).
func (c *Client) Fail(ctx context.Context, leaseID string, req FailRequest) (*FailResult, error) {
	return leaseCall[FailResult](ctx, c, leaseID, "fail", req)
}

// Decompose splits the item into children (atomically); the lease ends as
// decomposed and the item waits for its children.
func (c *Client) Decompose(ctx context.Context, leaseID string, req DecomposeRequest) (*Decomposition, error) {
	return leaseCall[Decomposition](ctx, c, leaseID, "decompose", req)
}

// Ask opens an attention request with the lease; the answer's lease has
// ended as attention_requested when the request blocks.
func (c *Client) Ask(ctx context.Context, leaseID string, req AskRequest) (*AskResult, error) {
	var out AskResult
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, "attention"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequestStop asks the worker holding the lease to stop (people); the
// worker learns it from its next heartbeat.
func (c *Client) RequestStop(ctx context.Context, leaseID, reason string) (*Lease, error) {
	var l Lease
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, "stop"), nil, StopRequest{Reason: reason}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetLease returns one lease and the first page of the refused reports
// about it (ObservationsNextCursor, when set, is where GetLeasePage goes
// on).
func (c *Client) GetLease(ctx context.Context, leaseID string) (*LeaseDetail, error) {
	return c.GetLeasePage(ctx, leaseID, "", 0)
}

// GetLeasePage returns one lease and the page of the refused reports about
// it after cursor ("": the first), at most limit (0: the server's
// default), fewer once they reach the byte budget of a page.
func (c *Client) GetLeasePage(ctx context.Context, leaseID, cursor string, limit int) (*LeaseDetail, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l LeaseDetail
	if _, err := c.do(ctx, http.MethodGet, "/v1/leases/"+esc(leaseID), q, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func leaseCall[T any](ctx context.Context, c *Client, leaseID, op string, req any, opts ...CallOption) (*T, error) {
	var out T
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, op), nil, req, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

func leasePath(id, op string) string { return "/v1/leases/" + esc(id) + "/" + op }

// HistoryOptions filters GET /v1/projects/{p}/leases.
type HistoryOptions struct {
	ItemID  string
	Worker  string
	Outcome string
	Since   time.Time
	Until   time.Time
	// Sort is acquired (the default) or ran (how long each lease ran),
	// descending with a leading "-" (e.g. "-acquired": newest first).
	Sort   string
	Limit  int
	Cursor string
}

// History returns one page of the project's lease history.
func (c *Client) History(ctx context.Context, project string, opt HistoryOptions) (*LeasePage, error) {
	q := url.Values{}
	set(q, "item_id", opt.ItemID)
	set(q, "worker", opt.Worker)
	set(q, "outcome", opt.Outcome)
	set(q, "sort", opt.Sort)
	set(q, "cursor", opt.Cursor)
	if !opt.Since.IsZero() {
		q.Set("since", opt.Since.UTC().Format(time.RFC3339Nano))
	}
	if !opt.Until.IsZero() {
		q.Set("until", opt.Until.UTC().Format(time.RFC3339Nano))
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var page LeasePage
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/leases", q, nil, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// ItemLeases returns every lease of one item, oldest first: it follows
// the list's pages (of the largest size the server allows) to the last.
func (c *Client) ItemLeases(ctx context.Context, project, itemID string) ([]Lease, error) {
	var all []Lease
	q := url.Values{"limit": {strconv.Itoa(maxPageSize)}}
	for {
		var page LeasePage
		if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(itemID)+"/leases", q, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Leases...)
		if page.NextCursor == nil {
			return all, nil
		}
		q.Set("cursor", *page.NextCursor)
	}
}

// maxPageSize is the largest page the server's lists answer (limit).
const maxPageSize = 500

// WorkersOptions pages GET /v1/projects/{p}/workers.
type WorkersOptions struct {
	Limit  int
	Cursor string
}

// Workers returns one page of the project's workers in name order (follow
// NextCursor for the next): each worker's outcome counts and usage, and
// the live leases of the page's workers with their liveness.
func (c *Client) Workers(ctx context.Context, project string, opt WorkersOptions) (*Workers, error) {
	q := url.Values{}
	set(q, "cursor", opt.Cursor)
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	var out Workers
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/workers", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FenceKeys is the server's keys document (GET /v1/fence/keys): the
// public keys destinations verify fence tokens with.
type FenceKeys struct {
	Keys []FenceKey `json:"keys"`
}

// FenceKey is one Ed25519 public key, raw bytes in base64url.
type FenceKey struct {
	KeyID     string `json:"kid"`
	Algorithm string `json:"alg"`
	PublicKey string `json:"public_key"`
}

// FenceKeys returns the public keys of the deployment's fence tokens.
func (c *Client) FenceKeys(ctx context.Context) (*FenceKeys, error) {
	var ks FenceKeys
	if _, err := c.do(ctx, http.MethodGet, "/v1/fence/keys", nil, nil, &ks); err != nil {
		return nil, err
	}
	return &ks, nil
}
