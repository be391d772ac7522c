package graph

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/page"
)

// Status is the stored lifecycle of an item: open until finished.
type Status string

// The statuses of an item.
const (
	StatusOpen      Status = "open"
	StatusDone      Status = "done"
	StatusCancelled Status = "cancelled"
)

// State is the derived state of an item (see the package documentation).
type State string

// The derived states of an item.
const (
	StateReady     State = "ready"
	StateLeased    State = "leased"
	StateBlocked   State = "blocked"
	StateAttention State = "attention"
	StateDone      State = "done"
	StateCancelled State = "cancelled"
)

// What an expired lease means for its item (Item.OnExpiry,
// Project.OnExpiry): OnExpiryRetry puts the item back in the queue;
// OnExpiryReconcile holds it for a person with an uncertain_outcome
// attention request, since the expired attempt may still be running or may
// have applied its effect.
const (
	OnExpiryRetry     = "retry"
	OnExpiryReconcile = "reconcile"
)

// Project is the unit of tenancy: every item belongs to one. OnExpiry is
// the default of its items that name none.
type Project struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
	OnExpiry  string
	// AttentionDueIn is the deadline a worker's question gets when its ask
	// names none (0: none).
	AttentionDueIn time.Duration
	// QuietAfter is how long a lease may heartbeat without its progress
	// changing before it is quiet; NoProgressAfter, when not 0, how long
	// before the sweeper ends it with a blocking no_progress request.
	QuietAfter      time.Duration
	NoProgressAfter time.Duration
}

// Item is a work item with its derived State and, for an open item, the
// BlockedBy explanation of what keeps it from being claimed.
type Item struct {
	ProjectID uuid.UUID
	ID        uuid.UUID
	ParentID  *uuid.UUID
	Title     string
	Body      string
	Priority  int32
	Labels    []string
	// Requires are the capabilities a worker must offer to claim the item;
	// Touches are the write scopes its lease holds (see CleanScopes).
	Requires        []string
	Touches         []string
	Metadata        json.RawMessage
	Result          json.RawMessage
	Status          Status
	State           State
	Epoch           int64
	Version         int32
	BlockedBy       BlockedBy
	ActiveLeaseID   *uuid.UUID
	PreviousWorker  *string
	PreferredWorker *string
	PreferredUntil  *time.Time
	NotBefore       *time.Time
	Failures        int32
	CreatedBy       string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	FinishedAt      *time.Time
	// OnExpiry is the item's own setting (OnExpiryRetry or
	// OnExpiryReconcile); nil means its project's default.
	OnExpiry *string
	// PlanKey is the key of the plan item it was imported from (nil: not
	// imported from a plan).
	PlanKey *string
	// Seq is the creation order within the project (ties of priority go to
	// the lower seq).
	Seq int64

	// gates are the stored readiness counters, so that fillBlockedBy asks
	// only for the lists that can be non-empty.
	gates gates
}

// Size is about how many bytes the item takes in a list's answer: its
// texts and JSON values as encoded there (page.TextSize, page.JSONSize),
// and page.RowOverhead for the rest (the byte budget of a page,
// page.MaxBytes).
func (it Item) Size() int {
	n := page.RowOverhead + page.TextSize(it.Title) + page.TextSize(it.Body) +
		page.JSONSize(it.Metadata) + page.JSONSize(it.Result) + page.TextSize(it.CreatedBy)
	for _, s := range []*string{it.PreviousWorker, it.PreferredWorker, it.OnExpiry, it.PlanKey} {
		if s != nil {
			n += page.TextSize(*s)
		}
	}
	for _, list := range [][]string{it.Labels, it.Requires, it.Touches} {
		for _, s := range list {
			n += page.TextSize(s) + 1
		}
	}
	return n + it.BlockedBy.size()
}

// size is about how many bytes the explanation takes in an item's answer:
// the titles, questions, workers and scopes it names, encoded, and a
// quarter of page.RowOverhead for each reference's id, state and times.
func (b BlockedBy) size() int {
	const ref = page.RowOverhead / 4
	n := 0
	for _, list := range [][]ItemRef{b.Dependencies, b.Children, b.Budgets} {
		for _, r := range list {
			n += page.TextSize(r.Title) + ref
		}
	}
	for _, a := range b.Attention {
		n += page.TextSize(a.Question) + ref
	}
	for _, h := range b.Scopes {
		n += page.TextSize(h.Worker) + ref
		for _, s := range h.Scopes {
			n += page.TextSize(s) + 1
		}
	}
	if b.ReservedFor != nil {
		n += page.TextSize(*b.ReservedFor)
	}
	return n
}

// gates are an item's readiness counters as stored, and whether a budget
// is over it (budget_roots: a spent one keeps it from being handed out).
type gates struct {
	unmetDependencies, openChildren, openAttention int32
	budgeted                                       bool
}

// ItemRef names an item and its derived state.
type ItemRef struct {
	ID    uuid.UUID
	Title string
	State State
}

// AttentionRef names an open blocking attention request.
type AttentionRef struct {
	ID        uuid.UUID
	Question  string
	CreatedAt time.Time
}

// MaxBlockedByRefs is how many of an item's open prerequisites, and of its
// open children, BlockedBy lists: a page of items lists them for every item
// on it, and an item may wait for thousands (a plan of 400 items each
// waiting for every earlier one made one page 46 MB). The counts say how
// many there are; GET .../items/{id}/graph lists them all.
const MaxBlockedByRefs = 20

// BlockedBy explains why an open item is not claimable: unmet dependencies
// (open prerequisites), open children, open blocking attention requests, a
// retry backoff (RetryAfter), and a continuity reservation
// (ReservedFor/ReservedUntil). The time gates are listed only while they lie
// in the future by the database clock (or the stub clock). It is empty for a
// done or cancelled item.
type BlockedBy struct {
	// Dependencies are the open prerequisites, at most MaxBlockedByRefs of
	// them (the earliest created); DependenciesTotal counts them all.
	Dependencies      []ItemRef
	DependenciesTotal int
	// Children are the open children, at most MaxBlockedByRefs of them
	// (the earliest created); ChildrenTotal counts them all.
	Children      []ItemRef
	ChildrenTotal int
	Attention     []AttentionRef
	RetryAfter    *time.Time
	ReservedFor   *string
	ReservedUntil *time.Time
	// Scopes are the live leases of other items that hold a write scope
	// overlapping the item's touches: the claim skips the item until they
	// end. Filled only for a ready item (FillScopeHolders).
	Scopes []ScopeHolder
	// Budgets are the budgeted items over the item (itself included)
	// whose budget is spent: no claim hands it out until a person raises
	// the budget. Filled only for a ready item.
	Budgets []ItemRef
}

// MoreDependencies is how many open prerequisites Dependencies leaves out.
func (b BlockedBy) MoreDependencies() int { return b.DependenciesTotal - len(b.Dependencies) }

// MoreChildren is how many open children Children leaves out.
func (b BlockedBy) MoreChildren() int { return b.ChildrenTotal - len(b.Children) }

// ScopeHolder is a live lease holding a scope that overlaps an item's
// touches: the lease, its worker and item, and its overlapping scopes.
type ScopeHolder struct {
	LeaseID uuid.UUID
	ItemID  uuid.UUID
	Worker  string
	Scopes  []string
}

// Empty reports whether nothing is listed.
func (b BlockedBy) Empty() bool {
	return len(b.Dependencies) == 0 && len(b.Children) == 0 && len(b.Attention) == 0 &&
		b.RetryAfter == nil && b.ReservedFor == nil && len(b.Scopes) == 0 && len(b.Budgets) == 0
}

// NewItem is the input of CreateItem.
type NewItem struct {
	Title     string
	Body      string
	Priority  int32
	ParentID  *uuid.UUID
	DependsOn []uuid.UUID
	Labels    []string
	// Requires (capabilities, validated as labels) and Touches (write
	// scopes, CleanScopes).
	Requires  []string
	Touches   []string
	Metadata  json.RawMessage
	CreatedBy string
	// OnExpiry is "retry", "reconcile" or "" (the project's default).
	OnExpiry string
}

// NewChild is one child in a decomposition (Service.CreateChildren). Key names it
// within the decomposition; DependsOnKeys refers to siblings by key.
type NewChild struct {
	Key      string
	Title    string
	Body     string
	Priority int32
	Labels   []string
	// Requires and Touches as in NewItem (the same validator:
	// cleanMatching).
	Requires      []string
	Touches       []string
	DependsOnKeys []string
}

// ItemPatch is an edit by a person; nil fields are left unchanged. When
// IfVersion is set and differs from the stored version the edit is refused
// with conflict.
type ItemPatch struct {
	Title    *string
	Body     *string
	Priority *int32
	Labels   *[]string
	Requires *[]string
	Touches  *[]string
	Metadata *json.RawMessage
	// OnExpiry: "retry", "reconcile", or "" to fall back to the project's
	// default.
	OnExpiry  *string
	IfVersion *int32
}

// ListFilter selects items for ListItems. Empty fields do not filter.
// Limit 0 means 50; more than 500 is refused. Cursor is the NextCursor of a
// previous page.
type ListFilter struct {
	States   []State
	Label    string
	ParentID *uuid.UUID
	Text     string
	// Order is the order of the list (the zero value: creation order).
	Order  ItemOrder
	Cursor string
	Limit  int
}

// ItemPage is one page of ListItems; NextCursor is empty on the last page.
type ItemPage struct {
	Items      []Item
	NextCursor string
}

// Neighbourhood is an item with its direct dependencies (all of them, with
// their state, finished ones included), its dependents, its children and its
// ancestors (root first).
type Neighbourhood struct {
	Item         Item
	Dependencies []ItemRef
	Dependents   []ItemRef
	Children     []ItemRef
	Ancestors    []ItemRef
}

// Edge kinds of a Subgraph.
const (
	EdgeDependsOn = "depends_on" // From depends on To
	EdgeChildOf   = "child_of"   // From is a child of To
)

// Edge is an edge of a Subgraph.
type Edge struct {
	From uuid.UUID
	To   uuid.UUID
	Kind string
}

// Subgraph is a picture of (part of) a project's graph: at most the asked
// number of nodes (Truncated says whether some were left out), the edges
// among them, and the longest chain of unfinished items among them, first
// prerequisite first.
type Subgraph struct {
	Nodes        []ItemRef
	Edges        []Edge
	CriticalPath []uuid.UUID
	Truncated    bool
}

// PlanItem is one item of a plan for ImportPlan. DependsOn holds keys of
// other plan items or ids of existing items of the project. Children are
// created below it. Line is the source line, used in error messages.
type PlanItem struct {
	Key       string
	Title     string
	Body      string
	Priority  int32
	Labels    []string
	Requires  []string
	Touches   []string
	DependsOn []string
	Children  []PlanItem
	Line      int
	// OnExpiry is "retry", "reconcile" or "" (the project's default), as in
	// NewItem.
	OnExpiry string
}

// ImportResult lists the items the import created (depth first, in plan
// order), the ids of the plan's keys (created or existing), and the keys
// that already existed in the project and were left alone.
type ImportResult struct {
	Items    []ItemRef
	Keys     map[string]uuid.UUID
	Existing map[string]ExistingItem
}

// ExistingItem is a plan item whose key already existed: it was left
// alone. Differs names the fields (title, body, priority, labels,
// requires, touches, parent, on_expiry, depends_on) in which the stored
// item differs from the plan; empty means unchanged.
type ExistingItem struct {
	ID      uuid.UUID
	Differs []string
}
