package wire

import (
	"encoding/json"
	"time"
)

// The request bodies, as a client sends them: a member left at its zero
// value is omitted and takes the server's default. (The server decodes
// into structs of its own that also record which members were present; a
// test in api checks that they accept exactly these members.)

// CreateProjectRequest is the body of POST /v1/projects.
type CreateProjectRequest struct {
	Name string `json:"name"`
}

// CreateTokenRequest is the body of POST /v1/projects/{p}/tokens.
type CreateTokenRequest struct {
	Name string `json:"name"`
	// Role is "admin", "human" or "agent".
	Role string `json:"role"`
}

// CreateItemRequest is the body of POST /v1/projects/{p}/items.
type CreateItemRequest struct {
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Priority  *int     `json:"priority,omitempty"`
	ParentID  string   `json:"parent_id,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	// Requires are capabilities (as labels); Touches are write scopes,
	// "resource" or "resource:path/glob".
	Requires []string `json:"requires,omitempty"`
	Touches  []string `json:"touches,omitempty"`
	// Metadata is a JSON object kept with the item.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// OnExpiry is OnExpiryRetry or OnExpiryReconcile; "" for the project's
	// default.
	OnExpiry string `json:"on_expiry,omitempty"`
}

// UpdateItemRequest is the body of PATCH /v1/projects/{p}/items/{id}; nil
// members are left as they are.
type UpdateItemRequest struct {
	Title    *string          `json:"title,omitempty"`
	Body     *string          `json:"body,omitempty"`
	Priority *int             `json:"priority,omitempty"`
	Labels   *[]string        `json:"labels,omitempty"`
	Requires *[]string        `json:"requires,omitempty"`
	Touches  *[]string        `json:"touches,omitempty"`
	Metadata *json.RawMessage `json:"metadata,omitempty"`
	// OnExpiry, when set, is OnExpiryRetry or OnExpiryReconcile, or ""
	// to take the item back to its project's default (sent as null).
	OnExpiry *string `json:"on_expiry,omitempty"`
	// Version, when set, makes the edit apply only to that version of the
	// item (409 conflict otherwise).
	Version *int `json:"version,omitempty"`
}

// MarshalJSON encodes the request as the API takes it: an OnExpiry of ""
// is the member on_expiry: null (back to the project's default), which a
// *string cannot say by itself.
func (r UpdateItemRequest) MarshalJSON() ([]byte, error) {
	type plain UpdateItemRequest
	if r.OnExpiry == nil || *r.OnExpiry != "" {
		return json.Marshal(plain(r))
	}
	r.OnExpiry = nil
	return json.Marshal(struct {
		plain
		// Shallower than plain's member of the same name, so it wins.
		OnExpiry *string `json:"on_expiry"`
	}{plain: plain(r)})
}

// CancelRequest is the body of POST /v1/projects/{p}/items/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// AddDependencyRequest is the body of POST
// /v1/projects/{p}/items/{id}/dependencies: the item waits for DependsOn.
type AddDependencyRequest struct {
	DependsOn string `json:"depends_on"`
}

// HoldRequest is the body of POST /v1/projects/{p}/items/{id}/attention,
// a person's hold on an item.
type HoldRequest struct {
	Question string `json:"question,omitempty"`
}

// ClaimRequest is the body of POST /v1/projects/{p}/claims.
type ClaimRequest struct {
	// Worker is a stable label of the claimant (continuity after an
	// attention request prefers the same label).
	Worker       string   `json:"worker"`
	LeaseSeconds int      `json:"lease_seconds,omitempty"`
	WaitSeconds  int      `json:"wait_seconds,omitempty"`
	Labels       []string `json:"labels,omitempty"`
	// MaxItems > 0 asks for a batch of up to that many leases, answered
	// as ClaimBatch (Client.ClaimBatch sets it).
	MaxItems int `json:"max_items,omitempty"`
	// Capabilities are what the worker can do: only items whose requires
	// are all among them are handed out.
	Capabilities []string `json:"capabilities,omitempty"`
}

// HeartbeatRequest is the body of POST /v1/leases/{id}/heartbeat.
type HeartbeatRequest struct {
	Epoch        int64           `json:"epoch"`
	Progress     json.RawMessage `json:"progress,omitempty"`
	LeaseSeconds int             `json:"lease_seconds,omitempty"`
	// WorkerTime is the worker's clock, diagnostic only.
	WorkerTime *time.Time `json:"worker_time,omitempty"`
	// Usage is the lease's usage so far (monotonic).
	Usage *Usage `json:"usage,omitempty"`
}

// CompleteRequest is the body of POST /v1/leases/{id}/complete.
type CompleteRequest struct {
	Epoch      int64           `json:"epoch"`
	Result     json.RawMessage `json:"result"`
	WorkerTime *time.Time      `json:"worker_time,omitempty"`
	// Usage is the lease's final usage (monotonic).
	Usage *Usage `json:"usage,omitempty"`
}

// BudgetRequest is the body of PUT /v1/projects/{p}/items/{id}/budget:
// the limits of the item's subtree (an absent limit is no limit).
type BudgetRequest struct {
	MaxTokens      *int64   `json:"max_tokens,omitempty"`
	MaxCostUSD     *float64 `json:"max_cost_usd,omitempty"`
	MaxWallSeconds *int64   `json:"max_wall_seconds,omitempty"`
	MaxDepth       *int     `json:"max_depth,omitempty"`
}

// ReleaseRequest is the body of POST /v1/leases/{id}/release.
type ReleaseRequest struct {
	Epoch  int64  `json:"epoch"`
	Reason string `json:"reason,omitempty"`
}

// FailRequest is the body of POST /v1/leases/{id}/fail. (The server also
// takes an object as "error"; this client sends the message as a string
// and anything structured as Details.)
type FailRequest struct {
	Epoch      int64           `json:"epoch"`
	Error      string          `json:"error"`
	Details    json.RawMessage `json:"details,omitempty"`
	WorkerTime *time.Time      `json:"worker_time,omitempty"`
}

// Child is one item a decomposition creates. DependsOnKeys name siblings.
type Child struct {
	Key      string   `json:"key"`
	Title    string   `json:"title"`
	Body     string   `json:"body,omitempty"`
	Priority *int     `json:"priority,omitempty"`
	Labels   []string `json:"labels,omitempty"`
	// Requires and Touches as in CreateItemRequest.
	Requires      []string `json:"requires,omitempty"`
	Touches       []string `json:"touches,omitempty"`
	DependsOnKeys []string `json:"depends_on_keys,omitempty"`
}

// DecomposeRequest is the body of POST /v1/leases/{id}/decompose.
type DecomposeRequest struct {
	Epoch    int64   `json:"epoch"`
	Children []Child `json:"children"`
}

// AskRequest is the body of POST /v1/leases/{id}/attention.
type AskRequest struct {
	Epoch            int64           `json:"epoch"`
	Question         string          `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers,omitempty"`
	Context          json.RawMessage `json:"context,omitempty"`
	// Blocking defaults to true on the server: the lease ends and the item
	// waits for the answer. False keeps the lease; the answer then arrives
	// on a later heartbeat.
	Blocking *bool `json:"blocking,omitempty"`
	// DueInSeconds is the question's deadline after it is asked (nil: the
	// project's default, if any). OnOverdue (OverdueEscalate,
	// OverdueDefaultAnswer, OverdueRelease) acts when it passes;
	// DefaultAnswer is the answer OverdueDefaultAnswer gives.
	DueInSeconds  *int64 `json:"due_in_seconds,omitempty"`
	OnOverdue     string `json:"on_overdue,omitempty"`
	DefaultAnswer string `json:"default_answer,omitempty"`
}

// The policies of an overdue question (AskRequest.OnOverdue).
const (
	OverdueEscalate      = "escalate"
	OverdueDefaultAnswer = "default_answer"
	OverdueRelease       = "release"
)

// StopRequest is the body of POST /v1/leases/{id}/stop.
type StopRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ResolveRequest is the body of POST /v1/attention/{id}/resolve: an
// answer, or for an uncertain_outcome request a decision (DecisionRetry,
// DecisionDone with Result, DecisionCancel) with an optional note.
type ResolveRequest struct {
	Answer   string          `json:"answer,omitempty"`
	Decision string          `json:"decision,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Note     string          `json:"note,omitempty"`
}

// UpdateProjectRequest is the body of PATCH /v1/projects/{p}.
type UpdateProjectRequest struct {
	OnExpiry string `json:"on_expiry,omitempty"`
	// AttentionDueInSeconds sets the deadline of a worker's question that
	// names none (0 removes it; nil leaves it).
	AttentionDueInSeconds *int64 `json:"attention_due_in_seconds,omitempty"`
	// QuietAfterSeconds: how long a lease may heartbeat without its
	// progress changing before it is quiet (nil leaves it).
	QuietAfterSeconds *int64 `json:"quiet_after_seconds,omitempty"`
	// NoProgressAfterSeconds: how long before a lease without progress is
	// ended with a no_progress request (0 removes the policy; nil leaves it).
	NoProgressAfterSeconds *int64 `json:"no_progress_after_seconds,omitempty"`
}

// DismissRequest is the body of POST /v1/attention/{id}/dismiss.
type DismissRequest struct {
	Note string `json:"note,omitempty"`
}

// PlanItem is one item of a plan: Key is local to the plan, DependsOn
// names other keys of the same plan (or ids of existing items of the
// project), Children are created under this item. Line, when set, is the
// line of the plan file the item was read from; the server names it in
// its errors.
type PlanItem struct {
	Key       string     `json:"key"`
	Title     string     `json:"title"`
	Body      string     `json:"body,omitempty"`
	Priority  *int       `json:"priority,omitempty"`
	Labels    []string   `json:"labels,omitempty"`
	Requires  []string   `json:"requires,omitempty"`
	Touches   []string   `json:"touches,omitempty"`
	DependsOn []string   `json:"depends_on,omitempty"`
	Children  []PlanItem `json:"children,omitempty"`
	Line      int        `json:"line,omitempty"`
	// OnExpiry is "retry" or "reconcile"; empty: the project's default.
	OnExpiry string `json:"on_expiry,omitempty"`
}

// PlanRequest is the body of POST /v1/projects/{p}/plans.
type PlanRequest struct {
	Items  []PlanItem `json:"items"`
	DryRun bool       `json:"dry_run,omitempty"`
}
