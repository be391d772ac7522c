package api

import (
	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wire"
)

func leaseView(l lease.Lease) wire.Lease {
	var outcome *string
	if l.Outcome != nil {
		o := string(*l.Outcome)
		outcome = &o
	}
	return wire.Lease{
		ID: l.ID.String(), ProjectID: l.ProjectID.String(), ItemID: l.ItemID.String(), Worker: l.Worker, Epoch: l.Epoch,
		Principal: l.Principal, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, EndedAt: l.EndedAt, Outcome: outcome,
		OutcomeDetail: rawOrNull(l.OutcomeDetail), HeartbeatAt: l.HeartbeatAt, Heartbeats: int(l.Heartbeats),
		Progress: rawOrNull(l.Progress), WorkerTime: l.WorkerTime, StopRequested: l.StopRequested,
		Result: rawOrNull(l.Result), StaleCalls: l.StaleCalls,
	}
}

func leaseViews(ls []lease.Lease) []wire.Lease {
	out := make([]wire.Lease, len(ls))
	for i, l := range ls {
		out[i] = leaseView(l)
	}
	return out
}

func observationViews(obs []lease.Observation) []wire.Observation {
	out := make([]wire.Observation, len(obs))
	for i, o := range obs {
		out[i] = wire.Observation{ID: o.ID.String(), LeaseID: o.LeaseID.String(), Epoch: o.Epoch, Kind: o.Kind,
			Operation: o.Operation, ReceivedAt: o.ReceivedAt, WorkerTime: o.WorkerTime, Payload: rawOrNull(o.Payload)}
	}
	return out
}

func workerStatView(s lease.WorkerStat) wire.WorkerStat {
	o := make(map[string]int, len(s.Outcomes))
	for k, n := range s.Outcomes {
		o[string(k)] = n
	}
	return wire.WorkerStat{Worker: s.Worker, Active: s.Active, Outcomes: o, LastSeen: s.LastSeen}
}

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
	}
}

func attentionViews(rs []attention.Request) []wire.AttentionRequest {
	out := make([]wire.AttentionRequest, len(rs))
	for i, r := range rs {
		out[i] = attentionView(r)
	}
	return out
}
