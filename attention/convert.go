package attention

import (
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// nowArg is the instant queries treat as now; nil means the database's.
type nowArg = *time.Time

func nowOf(clk clock.Clock) nowArg {
	if clk == nil {
		return nil
	}
	return clk.Now()
}

func fromRow(r dbq.AttentionRequest, itemTitle string) Request {
	answers := r.SuggestedAnswers
	if answers == nil {
		answers = []string{}
	}
	return Request{
		ID:               r.ID,
		Seq:              r.Seq,
		ProjectID:        r.ProjectID,
		ItemID:           r.ItemID,
		ItemTitle:        itemTitle,
		LeaseID:          r.LeaseID,
		Epoch:            r.Epoch,
		Source:           r.Source,
		Reason:           r.Reason,
		RequestedBy:      r.RequestedBy,
		Question:         r.Question,
		SuggestedAnswers: answers,
		Context:          r.Context,
		Blocking:         r.Blocking,
		State:            State(r.State),
		Answer:           r.Answer,
		ResolvedBy:       r.ResolvedBy,
		ResolvedAt:       r.ResolvedAt,
		CreatedAt:        r.CreatedAt,
		Decision:         (*Decision)(r.Decision),
		DueAt:            r.DueAt, OverdueAt: r.OverdueAt, OnOverdue: r.OnOverdue,
		DefaultAnswer: r.DefaultAnswer, AnsweredByDefault: r.AnsweredByDefault,
	}
}
