package api

import (
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
		StopNote: l.StopNote, Result: rawOrNull(l.Result), StaleCalls: l.StaleCalls, Scopes: nonNil(l.Scopes),
		Usage: usageView(l.Usage), ProgressAt: l.ProgressAt,
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
