package webhook

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The states of a delivery.
const (
	// StatePending: not yet delivered; NextAttemptAt says when it is tried
	// (nil while its webhook is disabled: it waits for it).
	StatePending = "pending"
	// StateDelivered: a 2xx answer.
	StateDelivered = "delivered"
	// StateFailed: given up: a 4xx answer other than 429, a redirect, a
	// refused address, or a day of failed attempts.
	StateFailed = "failed"
)

// Delivery is the one record of a webhook's event, as its last attempt
// left it.
type Delivery struct {
	ProjectID     uuid.UUID
	WebhookID     uuid.UUID
	Seq           int64
	EventType     string
	MessageID     string
	State         string
	Attempts      int
	NextAttemptAt *time.Time
	// The last attempt's answer: status code (nil: none came), latency,
	// the first bytes of the body, or why no answer came.
	LastStatus   *int
	LastLatency  *time.Duration
	LastResponse *string
	LastError    *string
	CreatedAt    time.Time
	FinishedAt   *time.Time
}

// Deliveries bounds.
const (
	DefaultDeliveries = 50
	MaxDeliveries     = 500
)

// Deliveries returns a webhook's most recent deliveries, newest event
// first: before (0: from the newest) and limit (0: DefaultDeliveries) page
// through them.
//
// Errors: invalid_argument (limit), not_found (no such webhook).
func (s *Service) Deliveries(ctx context.Context, project, id uuid.UUID, before int64, limit int) ([]Delivery, error) {
	switch {
	case limit == 0:
		limit = DefaultDeliveries
	case limit < 0 || limit > MaxDeliveries:
		return nil, wgerr.InvalidField("limit", "must be between 1 and %d", MaxDeliveries)
	}
	if _, err := s.Get(ctx, project, id); err != nil {
		return nil, err
	}
	var beforeArg *int64
	if before > 0 {
		beforeArg = &before
	}
	rows, err := q.ListDeliveries(ctx, s.exec, dbq.ListDeliveriesParams{
		ProjectID: project, WebhookID: id, Before: beforeArg, MaxRows: int32(limit),
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		d := Delivery{ProjectID: r.ProjectID, WebhookID: r.WebhookID, Seq: r.Seq, EventType: r.EventType,
			MessageID: messageID(r.ProjectID, r.Seq), State: r.State, Attempts: int(r.Attempts),
			LastResponse: r.LastResponse, LastError: r.LastError, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
		// A parked delivery (its webhook disabled) has no next attempt:
		// the column is NULL, not a time.
		if at, ok := r.NextAttemptAt.(time.Time); ok && r.State == StatePending {
			d.NextAttemptAt = &at
		}
		if r.LastStatus != nil {
			v := int(*r.LastStatus)
			d.LastStatus = &v
		}
		if r.LastLatencyMs != nil {
			v := time.Duration(*r.LastLatencyMs) * time.Millisecond
			d.LastLatency = &v
		}
		out[i] = d
	}
	return out, nil
}
