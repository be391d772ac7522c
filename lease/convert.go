package lease

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func fromRow(r dbq.Lease, refusals int32) Lease {
	l := Lease{
		ID:            r.ID,
		ProjectID:     r.ProjectID,
		ItemID:        r.ItemID,
		Epoch:         r.Epoch,
		Worker:        r.Worker,
		Principal:     r.Principal,
		TokenID:       r.TokenID,
		AcquiredAt:    r.AcquiredAt,
		ExpiresAt:     r.ExpiresAt,
		HeartbeatAt:   r.HeartbeatAt,
		Heartbeats:    r.Heartbeats,
		Progress:      r.Progress,
		WorkerTime:    r.WorkerTime,
		StopRequested: r.StopRequestedAt != nil,
		StopNote:      r.StopNote,
		EndedAt:       r.EndedAt,
		OutcomeDetail: r.OutcomeDetail,
		Result:        r.Result,
		StaleCalls:    int(refusals),
		Usage:         usageOf(r.TokensIn, r.TokensOut, r.CostMicroUsd, r.ToolCalls),
		ProgressAt:    r.ProgressAt,
		BudgetRoots:   r.BudgetRoots,
		Scopes:        r.Scopes,
	}
	if l.Scopes == nil {
		l.Scopes = []string{}
	}
	if r.Outcome != nil {
		o := Outcome(*r.Outcome)
		l.Outcome = &o
	}
	return l
}

func fromEndRow(r dbq.EndLeaseRow) Lease {
	return fromRow(dbq.Lease{
		ProjectID: r.ProjectID, ID: r.ID, Seq: r.Seq, ItemID: r.ItemID, Epoch: r.Epoch,
		Worker: r.Worker, TokenID: r.TokenID, Principal: r.Principal,
		AcquiredAt: r.AcquiredAt, ExpiresAt: r.ExpiresAt, HeartbeatAt: r.HeartbeatAt,
		Heartbeats: r.Heartbeats, Progress: r.Progress, WorkerTime: r.WorkerTime,
		StopRequestedAt: r.StopRequestedAt, StopRequestedBy: r.StopRequestedBy, StopNote: r.StopNote,
		EndedAt: r.EndedAt, Outcome: r.Outcome, OutcomeDetail: r.OutcomeDetail, Result: r.Result,
		TokensIn: r.TokensIn, TokensOut: r.TokensOut, CostMicroUsd: r.CostMicroUsd, ToolCalls: r.ToolCalls,
		ProgressAt: r.ProgressAt, BudgetRoots: r.BudgetRoots,
	}, 0)
}

func observationFromRow(r dbq.LeaseObservation) Observation {
	return Observation{
		ID: r.ID, LeaseID: r.LeaseID, Epoch: r.Epoch, Kind: r.Kind, Operation: r.Operation,
		ReceivedAt: r.ReceivedAt, WorkerTime: r.WorkerTime, Payload: r.Payload,
	}
}

// Input bounds.
const (
	maxWorkerBytes  = 200
	maxMessageBytes = 65536
)

func checkFence(f Fence) error {
	if f.Epoch < 1 {
		return wgerr.InvalidField("epoch", "must be a positive integer, got %d", f.Epoch)
	}
	return nil
}

func (c Config) checkTTL(field string, ttl time.Duration) error {
	if ttl < c.MinTTL || ttl > c.MaxTTL {
		return wgerr.InvalidField(field, "must be between %s and %s, got %s", c.MinTTL, c.MaxTTL, ttl)
	}
	return nil
}

// optionalJSON checks a JSON value a worker sent; absent and JSON null are
// both stored as SQL NULL.
func optionalJSON(field string, v json.RawMessage) (json.RawMessage, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, wgerr.InvalidField(field, "must be valid JSON")
	}
	if strings.TrimSpace(string(v)) == "null" {
		return nil, nil
	}
	return v, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are marshalled here
	}
	return b
}
