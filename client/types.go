package client

import (
	"encoding/json"
	"time"
)

// Item states, as the server derives them.
const (
	StateReady     = "ready"
	StateLeased    = "leased"
	StateBlocked   = "blocked"
	StateAttention = "attention"
	StateDone      = "done"
	StateCancelled = "cancelled"
)

// Lease outcomes: every ended lease has exactly one.
const (
	OutcomeCompleted          = "completed"
	OutcomeReleased           = "released"
	OutcomeFailed             = "failed"
	OutcomeCancelled          = "cancelled"
	OutcomeDecomposed         = "decomposed"
	OutcomeAttentionRequested = "attention_requested"
	OutcomeExpired            = "expired"
)

// Project is the unit of tenancy.
type Project struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// OnExpiry is the default of the project's items that name none
	// (OnExpiryRetry or OnExpiryReconcile).
	OnExpiry string `json:"on_expiry,omitempty"`
}

// What an expired lease means for its item (Item.OnExpiry,
// Project.OnExpiry).
const (
	OnExpiryRetry     = "retry"
	OnExpiryReconcile = "reconcile"
)

// The decisions on an uncertain outcome (Client.Decide).
const (
	DecisionRetry  = "retry"
	DecisionDone   = "done"
	DecisionCancel = "cancel"
)

// Token is an API token. Secret is only set in the answer that created it.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	ProjectID *string    `json:"project_id,omitempty"`
	Secret    string     `json:"token,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Item is a work item.
type Item struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Body     string   `json:"body"`
	Priority int      `json:"priority"`
	ParentID *string  `json:"parent_id"`
	Labels   []string `json:"labels"`
	State    string   `json:"state"`
	Epoch    int64    `json:"epoch"`
	// Version increases with every edit (optimistic concurrency).
	Version        int             `json:"version,omitempty"`
	BlockedBy      *BlockedBy      `json:"blocked_by,omitempty"`
	PreviousWorker *string         `json:"previous_worker"`
	ActiveLeaseID  *string         `json:"active_lease_id,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	// OnExpiry is the item's own setting; nil: its project's.
	OnExpiry *string `json:"on_expiry,omitempty"`
}

// BlockedBy explains why an item is not ready.
type BlockedBy struct {
	Dependencies []Ref `json:"dependencies"`
	Children     []Ref `json:"children"`
	Attention    []Ref `json:"attention"`
	// Other members (e.g. a retry backoff) are kept as they came.
	Extra map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps members other than the three lists in Extra.
func (b *BlockedBy) UnmarshalJSON(data []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for name, dst := range map[string]*[]Ref{"dependencies": &b.Dependencies, "children": &b.Children, "attention": &b.Attention} {
		if raw, ok := all[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return err
			}
			delete(all, name)
		}
	}
	for k, v := range all {
		if string(v) == "null" {
			delete(all, k)
		}
	}
	if len(all) > 0 {
		b.Extra = all
	}
	return nil
}

// Empty reports whether nothing blocks.
func (b *BlockedBy) Empty() bool {
	return b == nil || len(b.Dependencies)+len(b.Children)+len(b.Attention)+len(b.Extra) == 0
}

// Ref names another object (an item or an attention request) in a
// blocked_by list. The server may send a bare id or an object.
type Ref struct {
	ID       string `json:"id"`
	Title    string `json:"title,omitempty"`
	State    string `json:"state,omitempty"`
	Question string `json:"question,omitempty"`
}

// UnmarshalJSON accepts "id" as well as {"id": ...}.
func (r *Ref) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &r.ID)
	}
	type plain Ref
	return json.Unmarshal(data, (*plain)(r))
}

// Lease is one claim of an item; kept forever once ended.
type Lease struct {
	ID            string          `json:"id"`
	ItemID        string          `json:"item_id"`
	Worker        string          `json:"worker"`
	Epoch         int64           `json:"epoch"`
	AcquiredAt    time.Time       `json:"acquired_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	EndedAt       *time.Time      `json:"ended_at"`
	Outcome       *string         `json:"outcome"`
	OutcomeDetail json.RawMessage `json:"outcome_detail,omitempty"`
	HeartbeatAt   *time.Time      `json:"heartbeat_at,omitempty"`
	Heartbeats    int             `json:"heartbeats,omitempty"`
	Progress      json.RawMessage `json:"progress,omitempty"`
	StopRequested bool            `json:"stop_requested,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	// StaleCalls counts calls refused after the lease was lost.
	StaleCalls int `json:"stale_calls,omitempty"`
}

// AttentionRequest is a question for a person about an item.
type AttentionRequest struct {
	ID               string          `json:"id"`
	ItemID           string          `json:"item_id"`
	ItemTitle        string          `json:"item_title,omitempty"`
	LeaseID          *string         `json:"lease_id,omitempty"`
	Epoch            *int64          `json:"epoch,omitempty"`
	Source           string          `json:"source,omitempty"`
	Reason           string          `json:"reason,omitempty"`
	RequestedBy      string          `json:"requested_by,omitempty"`
	Question         string          `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers,omitempty"`
	Context          json.RawMessage `json:"context,omitempty"`
	Blocking         bool            `json:"blocking"`
	State            string          `json:"state"`
	Answer           *string         `json:"answer,omitempty"`
	ResolvedBy       *string         `json:"resolved_by,omitempty"`
	ResolvedAt       *time.Time      `json:"resolved_at,omitempty"`
	CreatedAt        time.Time       `json:"created_at"`
	// Decision resolved an uncertain_outcome request.
	Decision *string `json:"decision,omitempty"`
	// LateReports (on an uncertain_outcome request read by id or
	// resolved): the expired attempt's refused reports, each as the API
	// sent it.
	LateReports []json.RawMessage `json:"late_reports,omitempty"`
}
