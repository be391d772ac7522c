package api

import (
	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/wire"
)

func attentionView(r attention.Request) wire.AttentionRequest {
	sa := r.SuggestedAnswers
	if sa == nil {
		sa = []string{}
	}
	return wire.AttentionRequest{
		ID: r.ID.String(), ProjectID: r.ProjectID.String(), ItemID: r.ItemID.String(), ItemTitle: r.ItemTitle,
		LeaseID: optID(r.LeaseID), Epoch: r.Epoch, Source: r.Source, Reason: r.Reason, RequestedBy: r.RequestedBy,
		Question: r.Question, SuggestedAnswers: sa, Context: rawOrNull(r.Context), Blocking: r.Blocking,
		State: string(r.State), Answer: r.Answer, ResolvedBy: r.ResolvedBy, ResolvedAt: r.ResolvedAt, CreatedAt: r.CreatedAt,
		Decision: (*string)(r.Decision),
		DueAt:    r.DueAt, Overdue: r.Overdue(), OverdueAt: r.OverdueAt, OnOverdue: r.OnOverdue,
		DefaultAnswer: r.DefaultAnswer, AnsweredByDefault: r.AnsweredByDefault,
	}
}

func attentionViews(rs []attention.Request) []wire.AttentionRequest {
	out := make([]wire.AttentionRequest, len(rs))
	for i, r := range rs {
		out[i] = attentionView(r)
	}
	return out
}
