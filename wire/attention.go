package wire

import (
	"encoding/json"
	"time"
)

// AttentionRequest is a question for a person about an item (schema
// AttentionRequest).
type AttentionRequest struct {
	ID        string  `json:"id"`
	ProjectID string  `json:"project_id"`
	ItemID    string  `json:"item_id"`
	ItemTitle string  `json:"item_title"`
	LeaseID   *string `json:"lease_id"`
	Epoch     *int64  `json:"epoch"`
	// Source says who opened it: a worker, a person's hold, the system.
	Source           string          `json:"source"`
	Reason           string          `json:"reason"`
	RequestedBy      string          `json:"requested_by"`
	Question         string          `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers"`
	Context          json.RawMessage `json:"context"`
	Blocking         bool            `json:"blocking"`
	State            string          `json:"state"`
	Answer           *string         `json:"answer"`
	ResolvedBy       *string         `json:"resolved_by"`
	ResolvedAt       *time.Time      `json:"resolved_at"`
	CreatedAt        time.Time       `json:"created_at"`
	// Decision resolved an uncertain_outcome request (DecisionRetry,
	// DecisionDone, DecisionCancel); nil otherwise.
	Decision *string `json:"decision"`
	// LateReports, on an uncertain_outcome request read by id or resolved,
	// are the reports of the expired attempt refused since (kept, not
	// applied); absent elsewhere.
	LateReports []Observation `json:"late_reports,omitempty"`
	// DueAt is the deadline (nil: none); Overdue: open past it (since
	// OverdueAt). OnOverdue is the policy at the deadline and
	// DefaultAnswer the answer OverdueDefaultAnswer gives;
	// AnsweredByDefault: answered so, by "system".
	DueAt             *time.Time `json:"due_at"`
	Overdue           bool       `json:"overdue"`
	OverdueAt         *time.Time `json:"overdue_at"`
	OnOverdue         *string    `json:"on_overdue"`
	DefaultAnswer     *string    `json:"default_answer"`
	AnsweredByDefault bool       `json:"answered_by_default"`
}

// The decisions on an uncertain outcome (ResolveRequest.Decision).
const (
	DecisionRetry  = "retry"
	DecisionDone   = "done"
	DecisionCancel = "cancel"
)

// AttentionPage is one page of a project's (or one item's) attention
// requests, oldest first; NextCursor is nil on the last page (schema
// AttentionPage).
type AttentionPage struct {
	Attention  []AttentionRequest `json:"attention"`
	NextCursor *string            `json:"next_cursor"`
}
