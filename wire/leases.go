package wire

import (
	"encoding/json"
	"time"
)

// Lease outcomes: every ended lease has exactly one (schema Outcome).
const (
	OutcomeCompleted          = "completed"
	OutcomeReleased           = "released"
	OutcomeFailed             = "failed"
	OutcomeCancelled          = "cancelled"
	OutcomeDecomposed         = "decomposed"
	OutcomeAttentionRequested = "attention_requested"
	OutcomeExpired            = "expired"
)

// Lease is one claim of an item, kept forever once ended (schema Lease).
type Lease struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	ItemID    string `json:"item_id"`
	Worker    string `json:"worker"`
	Epoch     int64  `json:"epoch"`
	// Principal is the token the lease was granted to.
	Principal     string          `json:"principal"`
	AcquiredAt    time.Time       `json:"acquired_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	EndedAt       *time.Time      `json:"ended_at"`
	Outcome       *string         `json:"outcome"`
	OutcomeDetail json.RawMessage `json:"outcome_detail"`
	HeartbeatAt   *time.Time      `json:"heartbeat_at"`
	Heartbeats    int             `json:"heartbeats"`
	Progress      json.RawMessage `json:"progress"`
	// WorkerTime is the worker's clock at its last report (diagnostic only).
	WorkerTime    *time.Time `json:"worker_time"`
	StopRequested bool       `json:"stop_requested"`
	// StopNote is the reason the person who asked the worker to stop gave
	// (nil: none given, or no stop asked).
	StopNote *string         `json:"stop_note"`
	Result   json.RawMessage `json:"result"`
	// StaleCalls counts calls refused after the lease was lost.
	StaleCalls int `json:"stale_calls"`
	// Scopes are the write scopes the lease holds while it is live.
	Scopes []string `json:"scopes"`
	// Usage is the largest usage the worker reported on the lease.
	Usage Usage `json:"usage"`
	// ProgressAt is when the progress marker last changed (nil: not
	// since the claim).
	ProgressAt *time.Time `json:"progress_at"`
}

// Usage is what a worker spent: tokens in and out, dollars, tool calls
// (schema Usage). Reports are monotonic per lease: a lower figure than the
// stored one is ignored.
type Usage struct {
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int64   `json:"tool_calls"`
}

// Liveness of a live lease (LeaseActivity.Liveness).
const (
	LivenessHealthy = "healthy"
	LivenessQuiet   = "quiet"
	LivenessStale   = "stale"
)

// LeaseActivity is how alive a live lease looks, by the database clock
// (schema LeaseActivity): stale (past its expiry or silent for half its
// TTL), quiet (heartbeating without its progress changing for the
// project's quiet_after_seconds), else healthy. LastActivity is the last
// change of its progress (its claim, when none).
type LeaseActivity struct {
	LeaseID      string     `json:"lease_id"`
	ItemID       string     `json:"item_id"`
	Worker       string     `json:"worker"`
	Liveness     string     `json:"liveness"`
	LastActivity time.Time  `json:"last_activity"`
	HeartbeatAt  *time.Time `json:"heartbeat_at"`
	ExpiresAt    time.Time  `json:"expires_at"`
}

// Budget is an item's budget for its whole subtree and its ledger (schema
// Budget). A nil limit is no limit.
type Budget struct {
	ItemID         string    `json:"item_id"`
	MaxTokens      *int64    `json:"max_tokens"`
	MaxCostUSD     *float64  `json:"max_cost_usd"`
	MaxWallSeconds *int64    `json:"max_wall_seconds"`
	MaxDepth       *int      `json:"max_depth"`
	StartedAt      time.Time `json:"started_at"`
	Used           Usage     `json:"used"`
	Spent          bool      `json:"spent"`
	// RequestID is the budget_exhausted attention request of the spending.
	RequestID *string `json:"request_id"`
}

// ItemCost is what an item's own leases and its whole subtree spent, and
// its budget if it carries one (schema ItemCost).
type ItemCost struct {
	ItemID  string  `json:"item_id"`
	Own     Usage   `json:"own"`
	Subtree Usage   `json:"subtree"`
	Budget  *Budget `json:"budget"`
}

// Observation is a refused report about a lease: a stale call or a
// conflicting result (schema Observation).
type Observation struct {
	ID         string          `json:"id"`
	LeaseID    string          `json:"lease_id"`
	Epoch      int64           `json:"epoch"`
	Kind       string          `json:"kind"`
	Operation  string          `json:"operation"`
	ReceivedAt time.Time       `json:"received_at"`
	WorkerTime *time.Time      `json:"worker_time"`
	Payload    json.RawMessage `json:"payload"`
}

// LeaseDetail is a lease with its observations, oldest first (schema
// LeaseDetail).
type LeaseDetail struct {
	Lease
	Observations []Observation `json:"observations"`
	// ObservationsNextCursor is the cursor of the observations' next
	// page, nil on the last.
	ObservationsNextCursor *string `json:"observations_next_cursor"`
}

// LeasePage is one page of lease history, oldest first; NextCursor is nil
// on the last page (schema LeasePage).
type LeasePage struct {
	Leases     []Lease `json:"leases"`
	NextCursor *string `json:"next_cursor"`
}

// Claim is a granted lease, the item it holds and the item's latest
// attention requests (at most 20), oldest first, so the worker resumes
// with a person's answer (schema Claim).
type Claim struct {
	Lease     Lease              `json:"lease"`
	Item      Item               `json:"item"`
	Attention []AttentionRequest `json:"attention"`
	// OlderAttention: the item has requests older than those in
	// Attention (GET /v1/projects/{p}/items/{id}/attention pages through
	// all of them, oldest first).
	OlderAttention bool `json:"older_attention"`
	// FenceToken is the lease's signed fence token: send it to the systems
	// the work changes (header Workgraph-Fence; package fence).
	FenceToken string `json:"fence_token"`
}

// Heartbeat is the answer to a heartbeat: the new expiry, whether a person
// asked the worker to stop, and the answers to its non-blocking attention
// requests (schema HeartbeatResult).
type Heartbeat struct {
	Lease         Lease     `json:"lease"`
	ExpiresAt     time.Time `json:"expires_at"`
	StopRequested bool      `json:"stop_requested"`
	// StopReason says why: "requested" (a person) or "budget_exhausted"
	// (nil when the worker need not stop).
	StopReason *string `json:"stop_reason"`
	// Answers are the lease's newest answered (or dismissed) non-blocking
	// questions, oldest first; OlderAnswers: it has older ones (GET
	// /v1/projects/{p}/attention?item_id= pages through all of them).
	Answers      []AttentionRequest `json:"answers"`
	OlderAnswers bool               `json:"older_answers"`
	// FenceToken is the renewed lease's signed fence token.
	FenceToken string `json:"fence_token"`
}

// Completion is the answer to complete; Replayed is true when an identical
// completion had already been committed (schema Completion).
type Completion struct {
	Lease    Lease `json:"lease"`
	Item     Item  `json:"item"`
	Replayed bool  `json:"replayed"`
}

// LeaseItem is the answer to release: the ended lease and the item
// (schema LeaseItem).
type LeaseItem struct {
	Lease Lease `json:"lease"`
	Item  Item  `json:"item"`
}

// FailResult is the answer to fail: the item comes back after RetryAfter,
// or waits for a person (Attention, opened by the system) after too many
// failures (schema FailResult).
type FailResult struct {
	Lease      Lease             `json:"lease"`
	Item       Item              `json:"item"`
	RetryAfter *time.Time        `json:"retry_after"`
	Attention  *AttentionRequest `json:"attention"`
}

// Decomposition is the answer to decompose: the lease, ended as
// decomposed, and the children it created (schema Decomposition).
type Decomposition struct {
	Lease    Lease  `json:"lease"`
	Children []Item `json:"children"`
}

// AskResult is the answer to asking a person: the new request and the
// lease, ended as attention_requested when the request blocks (schema
// AskResult).
type AskResult struct {
	Attention AttentionRequest `json:"attention"`
	Lease     Lease            `json:"lease"`
}

// WorkerStat is one worker's live leases and outcome counts.
type WorkerStat struct {
	Worker   string         `json:"worker"`
	Active   int            `json:"active"`
	Outcomes map[string]int `json:"outcomes"`
	LastSeen time.Time      `json:"last_seen"`
	// Usage is the usage reported under this worker label.
	Usage Usage `json:"usage"`
}

// Workers is a project's live leases and per-worker counts (schema
// Workers).
type Workers struct {
	// Active is the live leases of the page's workers, by worker then
	// claim order (at most 500: each worker's Active counts its own).
	Active []Lease `json:"active"`
	// Workers is a page of the project's workers, by name.
	Workers []WorkerStat `json:"workers"`
	// Activity is the liveness of each live lease, in Active's order.
	Activity []LeaseActivity `json:"activity"`
	// NextCursor is the cursor of the next page of workers (nil on the
	// last).
	NextCursor *string `json:"next_cursor"`
}
