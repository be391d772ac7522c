package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
)

// itemJSON is the item of the contract: {id, title, body, priority,
// parent_id, labels, state, epoch, blocked_by, previous_worker, result,
// created_at, updated_at} plus bookkeeping fields.
type itemJSON struct {
	ID             uuid.UUID       `json:"id"`
	ProjectID      uuid.UUID       `json:"project_id"`
	Title          string          `json:"title"`
	Body           string          `json:"body"`
	Priority       int32           `json:"priority"`
	ParentID       *uuid.UUID      `json:"parent_id"`
	Labels         []string        `json:"labels"`
	State          graph.State     `json:"state"`
	Epoch          int64           `json:"epoch"`
	BlockedBy      blockedByJSON   `json:"blocked_by"`
	PreviousWorker *string         `json:"previous_worker"`
	Result         json.RawMessage `json:"result"`
	Metadata       json.RawMessage `json:"metadata"`
	Version        int32           `json:"version"`
	ActiveLeaseID  *uuid.UUID      `json:"active_lease_id"`
	Failures       int32           `json:"failures"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	FinishedAt     *time.Time      `json:"finished_at"`
	// OnExpiry is the item's own setting; null: its project's default.
	OnExpiry *string `json:"on_expiry"`
}

type blockedByJSON struct {
	Dependencies []itemRefJSON      `json:"dependencies"`
	Children     []itemRefJSON      `json:"children"`
	Attention    []attentionRefJSON `json:"attention"`
	// RetryAfter: after a failure, the item may be claimed again from then.
	RetryAfter *time.Time `json:"retry_after"`
	// ReservedFor: the worker that alone may claim it until ReservedUntil
	// (continuity after an attention request).
	ReservedFor   *string    `json:"reserved_for"`
	ReservedUntil *time.Time `json:"reserved_until"`
}

type itemRefJSON struct {
	ID    uuid.UUID   `json:"id"`
	Title string      `json:"title"`
	State graph.State `json:"state"`
}

type attentionRefJSON struct {
	ID        uuid.UUID `json:"id"`
	Question  string    `json:"question"`
	CreatedAt time.Time `json:"created_at"`
}

func itemView(it graph.Item) itemJSON {
	labels := it.Labels
	if labels == nil {
		labels = []string{}
	}
	result := it.Result
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	meta := it.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	b := blockedByJSON{
		Dependencies:  itemRefs(it.BlockedBy.Dependencies),
		Children:      itemRefs(it.BlockedBy.Children),
		Attention:     make([]attentionRefJSON, len(it.BlockedBy.Attention)),
		RetryAfter:    it.BlockedBy.RetryAfter,
		ReservedFor:   it.BlockedBy.ReservedFor,
		ReservedUntil: it.BlockedBy.ReservedUntil,
	}
	for i, a := range it.BlockedBy.Attention {
		b.Attention[i] = attentionRefJSON{ID: a.ID, Question: a.Question, CreatedAt: a.CreatedAt}
	}
	return itemJSON{
		ID: it.ID, ProjectID: it.ProjectID, Title: it.Title, Body: it.Body, Priority: it.Priority,
		ParentID: it.ParentID, Labels: labels, State: it.State, Epoch: it.Epoch, BlockedBy: b,
		PreviousWorker: it.PreviousWorker, Result: result, Metadata: meta, Version: it.Version,
		ActiveLeaseID: it.ActiveLeaseID, Failures: it.Failures, CreatedBy: it.CreatedBy,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, FinishedAt: it.FinishedAt,
		OnExpiry: it.OnExpiry,
	}
}

func itemRefs(refs []graph.ItemRef) []itemRefJSON {
	out := make([]itemRefJSON, len(refs))
	for i, r := range refs {
		out[i] = itemRefJSON{ID: r.ID, Title: r.Title, State: r.State}
	}
	return out
}

func itemViews(items []graph.Item) []itemJSON {
	out := make([]itemJSON, len(items))
	for i, it := range items {
		out[i] = itemView(it)
	}
	return out
}
