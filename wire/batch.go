package wire

import (
	"encoding/json"
	"time"
)

// ClaimBatch is the answer to a claim that named max_items: the granted
// leases, each with its item and attention history, in grant order
// (schema ClaimBatch). A claim without max_items answers one Claim.
type ClaimBatch struct {
	Claims []Claim `json:"claims"`
}

// CompletionEntry is one entry of the body of POST
// /v1/projects/{p}/completions, a JSON array of them (schema
// CompletionEntry).
type CompletionEntry struct {
	LeaseID    string          `json:"lease_id"`
	Epoch      int64           `json:"epoch"`
	Result     json.RawMessage `json:"result,omitempty"`
	WorkerTime *time.Time      `json:"worker_time,omitempty"`
	// Usage is the lease's final usage (monotonic).
	Usage *Usage `json:"usage,omitempty"`
}

// CompletionAnswer answers one entry of a batch completion: Status is what
// the single completion would have answered (200, or the problem's status),
// with Completion or Problem (an RFC 9457 problem document with its code)
// (schema CompletionAnswer).
type CompletionAnswer struct {
	LeaseID    string          `json:"lease_id"`
	Status     int             `json:"status"`
	Completion *Completion     `json:"completion"`
	Problem    json.RawMessage `json:"problem"`
}

// Completions is the answer to a batch completion, one answer per entry in
// the order of the entries (schema Completions).
type Completions struct {
	Completions []CompletionAnswer `json:"completions"`
}

// HeartbeatEntry is one entry of the body of POST
// /v1/projects/{p}/heartbeats, a JSON array of them (schema
// HeartbeatEntry).
type HeartbeatEntry struct {
	LeaseID      string          `json:"lease_id"`
	Epoch        int64           `json:"epoch"`
	Progress     json.RawMessage `json:"progress,omitempty"`
	LeaseSeconds int             `json:"lease_seconds,omitempty"`
	WorkerTime   *time.Time      `json:"worker_time,omitempty"`
	// Usage is the lease's usage so far (monotonic).
	Usage *Usage `json:"usage,omitempty"`
}

// HeartbeatAnswer answers one entry of a batch heartbeat, as
// CompletionAnswer does (schema HeartbeatAnswer).
type HeartbeatAnswer struct {
	LeaseID   string          `json:"lease_id"`
	Status    int             `json:"status"`
	Heartbeat *Heartbeat      `json:"heartbeat"`
	Problem   json.RawMessage `json:"problem"`
}

// Heartbeats is the answer to a batch heartbeat, one answer per entry in
// the order of the entries (schema Heartbeats).
type Heartbeats struct {
	Heartbeats []HeartbeatAnswer `json:"heartbeats"`
}
