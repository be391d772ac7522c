package api

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wire"
)

// The conversions from domain values to their wire shapes (package wire).

func itemView(it graph.Item) wire.Item {
	labels := it.Labels
	if labels == nil {
		labels = []string{}
	}
	meta := it.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	b := wire.BlockedBy{
		Dependencies:      itemRefs(it.BlockedBy.Dependencies),
		DependenciesTotal: it.BlockedBy.DependenciesTotal,
		Children:          itemRefs(it.BlockedBy.Children),
		ChildrenTotal:     it.BlockedBy.ChildrenTotal,
		Attention:         make([]wire.AttentionRef, len(it.BlockedBy.Attention)),
		RetryAfter:        it.BlockedBy.RetryAfter,
		ReservedFor:       it.BlockedBy.ReservedFor,
		ReservedUntil:     it.BlockedBy.ReservedUntil,
		Scopes:            make([]wire.ScopeHolder, len(it.BlockedBy.Scopes)),
		Budgets:           itemRefs(it.BlockedBy.Budgets),
	}
	for i, h := range it.BlockedBy.Scopes {
		b.Scopes[i] = wire.ScopeHolder{LeaseID: h.LeaseID.String(), ItemID: h.ItemID.String(), Worker: h.Worker, Scopes: nonNil(h.Scopes)}
	}
	for i, a := range it.BlockedBy.Attention {
		b.Attention[i] = wire.AttentionRef{ID: a.ID.String(), Question: a.Question, CreatedAt: a.CreatedAt}
	}
	return wire.Item{
		ID: it.ID.String(), ProjectID: it.ProjectID.String(), Title: it.Title, Body: it.Body, Priority: int(it.Priority),
		ParentID: optID(it.ParentID), Labels: labels, Requires: nonNil(it.Requires), Touches: nonNil(it.Touches), State: string(it.State), Epoch: it.Epoch, BlockedBy: b,
		PreviousWorker: it.PreviousWorker, Result: rawOrNull(it.Result), Metadata: meta, Version: int(it.Version),
		ActiveLeaseID: optID(it.ActiveLeaseID), Failures: int(it.Failures), CreatedBy: it.CreatedBy,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, FinishedAt: it.FinishedAt,
		OnExpiry: it.OnExpiry, PlanKey: it.PlanKey,
	}
}

// nonNil is s, or an empty list for nil (the wire sends [], never null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func itemRefs(refs []graph.ItemRef) []wire.ItemRef {
	out := make([]wire.ItemRef, len(refs))
	for i, r := range refs {
		out[i] = wire.ItemRef{ID: r.ID.String(), Title: r.Title, State: string(r.State)}
	}
	return out
}

func itemViews(items []graph.Item) []wire.Item {
	out := make([]wire.Item, len(items))
	for i, it := range items {
		out[i] = itemView(it)
	}
	return out
}

func subgraphView(g graph.Subgraph) wire.Subgraph {
	out := wire.Subgraph{Nodes: itemRefs(g.Nodes), Edges: make([]wire.Edge, len(g.Edges)), CriticalPath: ids(g.CriticalPath), Truncated: g.Truncated}
	for i, e := range g.Edges {
		out.Edges[i] = wire.Edge{From: e.From.String(), To: e.To.String(), Kind: e.Kind}
	}
	return out
}

// optID is an optional id on the wire: nil stays null.
func optID(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := id.String()
	return &s
}

// ids is a list of ids on the wire, never null.
func ids(in []uuid.UUID) []string {
	out := make([]string, len(in))
	for i, id := range in {
		out[i] = id.String()
	}
	return out
}

// rawOrNull is an optional JSON value on the wire: absent is null.
func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}
