package wire

import (
	"encoding/json"
	"time"
)

// Event is one entry of the event log (schema Event): what changed, when
// (the database's clock), who did it, and a small payload of ids and the
// fields that changed. Seq increases within a project, with gaps.
type Event struct {
	ProjectID   string          `json:"project_id"`
	Seq         int64           `json:"seq"`
	Type        string          `json:"type"`
	At          time.Time       `json:"at"`
	Actor       string          `json:"actor"`
	ItemID      *string         `json:"item_id"`
	LeaseID     *string         `json:"lease_id"`
	AttentionID *string         `json:"attention_id"`
	Payload     json.RawMessage `json:"payload"`
}

// EventPage is one read of the log, oldest first (schema EventPage):
// pass NextAfter as the next read's after to see every later event once.
type EventPage struct {
	Events    []Event `json:"events"`
	NextAfter int64   `json:"next_after"`
}
