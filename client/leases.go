package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ClaimRequest is the body of POST /v1/projects/{p}/claims.
type ClaimRequest struct {
	// Worker is a stable label of the claimant (continuity after an
	// attention request prefers the same label).
	Worker       string   `json:"worker"`
	LeaseSeconds int      `json:"lease_seconds,omitempty"`
	WaitSeconds  int      `json:"wait_seconds,omitempty"`
	Labels       []string `json:"labels,omitempty"`
}

// Claim is a granted lease and the item it holds, with the item's attention
// history (questions and answers from earlier leases).
type Claim struct {
	Lease     Lease              `json:"lease"`
	Item      Item               `json:"item"`
	Attention []AttentionRequest `json:"attention"`
	// FenceToken is the lease's signed fence token: send it to the systems
	// the work changes (header Workgraph-Fence; package fence).
	FenceToken string `json:"fence_token"`
}

// Claim takes the highest-priority ready item of the project, waiting up to
// req.WaitSeconds for one. Nothing ready: (nil, ErrNothingReady).
func (c *Client) Claim(ctx context.Context, project string, req ClaimRequest) (*Claim, error) {
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

// HeartbeatRequest is the body of POST /v1/leases/{id}/heartbeat.
type HeartbeatRequest struct {
	Epoch        int64           `json:"epoch"`
	Progress     json.RawMessage `json:"progress,omitempty"`
	LeaseSeconds int             `json:"lease_seconds,omitempty"`
	WorkerTime   *time.Time      `json:"worker_time,omitempty"`
}

// Heartbeat is the answer to a heartbeat: the new expiry, whether a person
// asked the worker to stop, and answers to non-blocking attention requests.
type Heartbeat struct {
	Lease         Lease              `json:"lease"`
	ExpiresAt     time.Time          `json:"expires_at"`
	StopRequested bool               `json:"stop_requested"`
	Answers       []AttentionRequest `json:"answers"`
	// FenceToken is the renewed lease's signed fence token.
	FenceToken string `json:"fence_token"`
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

// LeaseResult is the answer to complete, release, fail and decompose.
type LeaseResult struct {
	Lease Lease `json:"lease"`
	Item  *Item `json:"item,omitempty"`
	// Replayed is true when an identical completion had already been
	// committed.
	Replayed bool `json:"replayed,omitempty"`
	// Children are the items a decomposition created.
	Children []Item `json:"children,omitempty"`
	// RetryAfter is when a failed item may be claimed again.
	RetryAfter *time.Time `json:"retry_after,omitempty"`
	// Attention is the request the system opened instead of another retry
	// after repeated failures.
	Attention *AttentionRequest `json:"attention,omitempty"`
}

// CompleteRequest is the body of POST /v1/leases/{id}/complete.
type CompleteRequest struct {
	Epoch  int64           `json:"epoch"`
	Result json.RawMessage `json:"result"`
}

// Complete finishes the item with result. ErrLeaseLost when the lease is
// gone; ErrConflictingResult when it was completed with another result.
func (c *Client) Complete(ctx context.Context, leaseID string, req CompleteRequest) (*LeaseResult, error) {
	if req.Result == nil {
		req.Result = json.RawMessage("null")
	}
	return c.leaseCall(ctx, leaseID, "complete", req, selfIdempotent())
}

// ReleaseRequest is the body of POST /v1/leases/{id}/release.
type ReleaseRequest struct {
	Epoch  int64  `json:"epoch"`
	Reason string `json:"reason,omitempty"`
}

// Release gives the item back to circulation.
func (c *Client) Release(ctx context.Context, leaseID string, req ReleaseRequest) (*LeaseResult, error) {
	return c.leaseCall(ctx, leaseID, "release", req)
}

// FailRequest is the body of POST /v1/leases/{id}/fail.
type FailRequest struct {
	Epoch   int64           `json:"epoch"`
	Error   string          `json:"error"`
	Details json.RawMessage `json:"details,omitempty"`
}

// Fail reports the attempt failed; the item returns to circulation after a
// backoff (or waits for a person after repeated failures).
func (c *Client) Fail(ctx context.Context, leaseID string, req FailRequest) (*LeaseResult, error) {
	return c.leaseCall(ctx, leaseID, "fail", req)
}

// Child is one item a decomposition creates. DependsOnKeys name siblings.
type Child struct {
	Key           string   `json:"key"`
	Title         string   `json:"title"`
	Body          string   `json:"body,omitempty"`
	Priority      *int     `json:"priority,omitempty"`
	Labels        []string `json:"labels,omitempty"`
	DependsOnKeys []string `json:"depends_on_keys,omitempty"`
}

// DecomposeRequest is the body of POST /v1/leases/{id}/decompose.
type DecomposeRequest struct {
	Epoch    int64   `json:"epoch"`
	Children []Child `json:"children"`
}

// Decompose splits the item into children (atomically); the lease ends as
// decomposed and the item waits for its children.
func (c *Client) Decompose(ctx context.Context, leaseID string, req DecomposeRequest) (*LeaseResult, error) {
	return c.leaseCall(ctx, leaseID, "decompose", req)
}

// AskRequest is the body of POST /v1/leases/{id}/attention.
type AskRequest struct {
	Epoch            int64           `json:"epoch"`
	Question         string          `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers,omitempty"`
	Context          json.RawMessage `json:"context,omitempty"`
	// Blocking defaults to true on the server: the lease ends and the item
	// waits for the answer. Set it to false to keep the lease; the answer
	// then arrives on a later heartbeat.
	Blocking *bool `json:"blocking,omitempty"`
}

// Asked is the answer to an attention request: the request and the lease
// (ended as attention_requested when the request was blocking).
type Asked struct {
	Request AttentionRequest `json:"request"`
	Lease   Lease            `json:"lease"`
}

// Ask opens an attention request with the lease.
func (c *Client) Ask(ctx context.Context, leaseID string, req AskRequest) (*Asked, error) {
	var out Asked
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, "attention"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequestStop asks the worker holding the lease to stop (people); the
// worker learns it from its next heartbeat.
func (c *Client) RequestStop(ctx context.Context, leaseID, reason string) (*Lease, error) {
	var l Lease
	if _, err := c.do(ctx, http.MethodPost, leasePath(leaseID, "stop"), nil, map[string]string{"reason": reason}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetLease returns one lease.
func (c *Client) GetLease(ctx context.Context, leaseID string) (*Lease, error) {
	var l Lease
	if _, err := c.do(ctx, http.MethodGet, "/v1/leases/"+esc(leaseID), nil, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (c *Client) leaseCall(ctx context.Context, leaseID, op string, req any, opts ...CallOption) (*LeaseResult, error) {
	var out LeaseResult
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
	Limit   int
	Cursor  string
}

// LeasePage is one page of lease history, oldest first.
type LeasePage struct {
	Leases     []Lease `json:"leases"`
	NextCursor string  `json:"next_cursor"`
}

// History returns one page of the project's lease history.
func (c *Client) History(ctx context.Context, project string, opt HistoryOptions) (*LeasePage, error) {
	q := url.Values{}
	set(q, "item_id", opt.ItemID)
	set(q, "worker", opt.Worker)
	set(q, "outcome", opt.Outcome)
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

// ItemLeases returns every lease of one item, oldest first.
func (c *Client) ItemLeases(ctx context.Context, project, itemID string) ([]Lease, error) {
	var page LeasePage
	if _, err := c.do(ctx, http.MethodGet, itemsPath(project)+"/"+esc(itemID)+"/leases", nil, nil, &page); err != nil {
		return nil, err
	}
	return page.Leases, nil
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
