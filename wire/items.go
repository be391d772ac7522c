package wire

import (
	"encoding/json"
	"time"
)

// Item states, as the server derives them (schema ItemState).
const (
	StateReady     = "ready"
	StateLeased    = "leased"
	StateBlocked   = "blocked"
	StateAttention = "attention"
	StateDone      = "done"
	StateCancelled = "cancelled"
)

// Item is a work item (schema Item).
type Item struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"project_id"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	Priority  int      `json:"priority"`
	ParentID  *string  `json:"parent_id"`
	Labels    []string `json:"labels"`
	// Requires are the capabilities a claim must offer to get the item;
	// Touches are the write scopes its lease holds.
	Requires []string `json:"requires"`
	Touches  []string `json:"touches"`
	State    string   `json:"state"`
	// Epoch is the fencing token: every claim increments it.
	Epoch          int64     `json:"epoch"`
	BlockedBy      BlockedBy `json:"blocked_by"`
	PreviousWorker *string   `json:"previous_worker"`
	// Result is the completing lease's result, any JSON value ("null" until
	// then).
	Result   json.RawMessage `json:"result"`
	Metadata json.RawMessage `json:"metadata"`
	// Version increases with every edit; it is the item's ETag.
	Version       int        `json:"version"`
	ActiveLeaseID *string    `json:"active_lease_id"`
	Failures      int        `json:"failures"`
	CreatedBy     string     `json:"created_by"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	// OnExpiry is the item's own setting (OnExpiryRetry or
	// OnExpiryReconcile); nil: its project's default.
	OnExpiry *string `json:"on_expiry"`
	// PlanKey is the key of the plan item it was imported from; nil: not
	// imported from a plan.
	PlanKey *string `json:"plan_key"`
}

// BlockedBy says why an item is not ready (schema BlockedBy).
type BlockedBy struct {
	// Dependencies are the open prerequisites, at most 20 (the earliest
	// created); DependenciesTotal counts them all.
	Dependencies      []ItemRef `json:"dependencies"`
	DependenciesTotal int       `json:"dependencies_total"`
	// Children are the open children, at most 20 (the earliest created);
	// ChildrenTotal counts them all.
	Children      []ItemRef      `json:"children"`
	ChildrenTotal int            `json:"children_total"`
	Attention     []AttentionRef `json:"attention"`
	// RetryAfter: after a failure, the item may be claimed again from then.
	RetryAfter *time.Time `json:"retry_after"`
	// ReservedFor is the worker that alone may claim the item until
	// ReservedUntil (continuity after an attention request).
	ReservedFor   *string    `json:"reserved_for"`
	ReservedUntil *time.Time `json:"reserved_until"`
	// Scopes are the live leases holding write scopes that overlap the
	// item's touches (listed for a ready item).
	Scopes []ScopeHolder `json:"scopes"`
	// Budgets are the budgeted items over the item (itself included)
	// whose budget is spent (listed for a ready item): it is not handed
	// out until a person raises the budget.
	Budgets []ItemRef `json:"budgets"`
}

// ScopeHolder is a live lease holding scopes that overlap an item's
// touches (schema ScopeHolder).
type ScopeHolder struct {
	LeaseID string   `json:"lease_id"`
	ItemID  string   `json:"item_id"`
	Worker  string   `json:"worker"`
	Scopes  []string `json:"scopes"`
}

// Empty reports whether nothing blocks.
func (b BlockedBy) Empty() bool {
	return len(b.Dependencies)+len(b.Children)+len(b.Attention)+len(b.Scopes)+len(b.Budgets) == 0 &&
		b.RetryAfter == nil && b.ReservedFor == nil && b.ReservedUntil == nil
}

// ItemRef names an item (schema ItemRef).
type ItemRef struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	State string `json:"state"`
}

// AttentionRef names an open blocking attention request of an item.
type AttentionRef struct {
	ID        string    `json:"id"`
	Question  string    `json:"question"`
	CreatedAt time.Time `json:"created_at"`
}

// ItemPage is one page of items; NextCursor is nil on the last page
// (schema ItemPage).
type ItemPage struct {
	Items      []Item  `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// Dependency is the answer to adding a dependency: the edge and the
// dependent item (schema Dependency).
type Dependency struct {
	ItemID    string `json:"item_id"`
	DependsOn string `json:"depends_on"`
	Item      Item   `json:"item"`
}

// ItemGraph is an item's neighbourhood and its critical path, the longest
// chain of unfinished prerequisites ending at the item (schema ItemGraph).
type ItemGraph struct {
	Item         Item      `json:"item"`
	Dependencies []ItemRef `json:"dependencies"`
	Dependents   []ItemRef `json:"dependents"`
	Children     []ItemRef `json:"children"`
	Ancestors    []ItemRef `json:"ancestors"`
	CriticalPath []ItemRef `json:"critical_path"`
}

// Edge is one edge of a subgraph: kind "dependency" (From depends on To)
// or "child" (From is the parent of To).
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// Subgraph is (part of) a project's graph (schema Subgraph).
type Subgraph struct {
	Nodes        []ItemRef `json:"nodes"`
	Edges        []Edge    `json:"edges"`
	CriticalPath []string  `json:"critical_path"`
	Truncated    bool      `json:"truncated"`
}

// PlanResult is what a plan created (or, for a dry run, would create): the
// new items, the map from plan keys to item ids, and the keys that existed
// already (schema PlanResult).
type PlanResult struct {
	Items    []ItemRef               `json:"items"`
	Keys     map[string]string       `json:"keys"`
	Existing map[string]ExistingItem `json:"existing"`
	DryRun   bool                    `json:"dry_run"`
}

// ExistingItem is a plan key that already existed in the project: the
// import left that item alone. Differs names the fields (title, body,
// priority, labels, requires, touches, parent, on_expiry, depends_on) in
// which it differs from the plan; empty: unchanged (PlanResult.existing in
// the schema).
type ExistingItem struct {
	ID      string   `json:"id"`
	Differs []string `json:"differs"`
}
