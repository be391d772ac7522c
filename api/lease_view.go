package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/lease"
)

// leaseJSON is the lease of the contract: {id, item_id, worker, epoch,
// acquired_at, expires_at, ended_at, outcome, outcome_detail} plus
// diagnostics.
type leaseJSON struct {
	ID            uuid.UUID       `json:"id"`
	ProjectID     uuid.UUID       `json:"project_id"`
	ItemID        uuid.UUID       `json:"item_id"`
	Worker        string          `json:"worker"`
	Epoch         int64           `json:"epoch"`
	Principal     string          `json:"principal"`
	AcquiredAt    time.Time       `json:"acquired_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	EndedAt       *time.Time      `json:"ended_at"`
	Outcome       *lease.Outcome  `json:"outcome"`
	OutcomeDetail json.RawMessage `json:"outcome_detail"`
	HeartbeatAt   *time.Time      `json:"heartbeat_at"`
	Heartbeats    int32           `json:"heartbeats"`
	Progress      json.RawMessage `json:"progress"`
	WorkerTime    *time.Time      `json:"worker_time"`
	StopRequested bool            `json:"stop_requested"`
	Result        json.RawMessage `json:"result"`
	StaleCalls    int             `json:"stale_calls"`
}

func rawOrNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

func leaseView(l lease.Lease) leaseJSON {
	return leaseJSON{
		ID: l.ID, ProjectID: l.ProjectID, ItemID: l.ItemID, Worker: l.Worker, Epoch: l.Epoch, Principal: l.Principal,
		AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, EndedAt: l.EndedAt, Outcome: l.Outcome,
		OutcomeDetail: rawOrNull(l.OutcomeDetail), HeartbeatAt: l.HeartbeatAt, Heartbeats: l.Heartbeats,
		Progress: rawOrNull(l.Progress), WorkerTime: l.WorkerTime, StopRequested: l.StopRequested,
		Result: rawOrNull(l.Result), StaleCalls: l.StaleCalls,
	}
}

func leaseViews(ls []lease.Lease) []leaseJSON {
	out := make([]leaseJSON, len(ls))
	for i, l := range ls {
		out[i] = leaseView(l)
	}
	return out
}

type observationJSON struct {
	ID         uuid.UUID       `json:"id"`
	LeaseID    uuid.UUID       `json:"lease_id"`
	Epoch      int64           `json:"epoch"`
	Kind       string          `json:"kind"`
	Operation  string          `json:"operation"`
	ReceivedAt time.Time       `json:"received_at"`
	WorkerTime *time.Time      `json:"worker_time"`
	Payload    json.RawMessage `json:"payload"`
}

func observationViews(obs []lease.Observation) []observationJSON {
	out := make([]observationJSON, len(obs))
	for i, o := range obs {
		out[i] = observationJSON{ID: o.ID, LeaseID: o.LeaseID, Epoch: o.Epoch, Kind: o.Kind, Operation: o.Operation,
			ReceivedAt: o.ReceivedAt, WorkerTime: o.WorkerTime, Payload: rawOrNull(o.Payload)}
	}
	return out
}

// attentionJSON is an attention request.
type attentionJSON struct {
	ID               uuid.UUID       `json:"id"`
	ProjectID        uuid.UUID       `json:"project_id"`
	ItemID           uuid.UUID       `json:"item_id"`
	ItemTitle        string          `json:"item_title"`
	LeaseID          *uuid.UUID      `json:"lease_id"`
	Epoch            *int64          `json:"epoch"`
	Source           string          `json:"source"`
	Reason           string          `json:"reason"`
	RequestedBy      string          `json:"requested_by"`
	Question         string          `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers"`
	Context          json.RawMessage `json:"context"`
	Blocking         bool            `json:"blocking"`
	State            attention.State `json:"state"`
	Answer           *string         `json:"answer"`
	ResolvedBy       *string         `json:"resolved_by"`
	ResolvedAt       *time.Time      `json:"resolved_at"`
	CreatedAt        time.Time       `json:"created_at"`
	// Decision resolved an uncertain_outcome request (retry, done,
	// cancel); null otherwise.
	Decision *attention.Decision `json:"decision"`
	// LateReports, on an uncertain_outcome request read by id or resolved,
	// are the reports of the expired attempt refused since (kept, not
	// applied); absent elsewhere.
	LateReports []observationJSON `json:"late_reports,omitempty"`
}

func attentionView(r attention.Request) attentionJSON {
	sa := r.SuggestedAnswers
	if sa == nil {
		sa = []string{}
	}
	return attentionJSON{
		ID: r.ID, ProjectID: r.ProjectID, ItemID: r.ItemID, ItemTitle: r.ItemTitle, LeaseID: r.LeaseID, Epoch: r.Epoch,
		Source: r.Source, Reason: r.Reason, RequestedBy: r.RequestedBy, Question: r.Question, SuggestedAnswers: sa,
		Context: rawOrNull(r.Context), Blocking: r.Blocking, State: r.State, Answer: r.Answer,
		ResolvedBy: r.ResolvedBy, ResolvedAt: r.ResolvedAt, CreatedAt: r.CreatedAt, Decision: r.Decision,
	}
}

func attentionViews(rs []attention.Request) []attentionJSON {
	out := make([]attentionJSON, len(rs))
	for i, r := range rs {
		out[i] = attentionView(r)
	}
	return out
}
