package attention

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/page"

	"github.com/workgraph-dev/workgraph/clock"
)

// State is the lifecycle of a request: open until resolved or dismissed.
type State string

// The states of a request.
const (
	StateOpen      State = "open"
	StateResolved  State = "resolved"
	StateDismissed State = "dismissed"
)

// Who opened a request (Request.Source).
const (
	SourceWorker = "worker"
	SourceSystem = "system"
	SourcePerson = "person"
)

// Why a request was opened (Request.Reason).
const (
	ReasonQuestion        = "question"
	ReasonRepeatedExpiry  = "repeated_expiry"
	ReasonRepeatedFailure = "repeated_failure"
	ReasonHold            = "hold"
	// ReasonUncertainOutcome: a lease of an item with on_expiry
	// "reconcile" expired; its attempt may still be running or may have
	// applied its effect. Resolved with a Decision (Decide).
	ReasonUncertainOutcome = "uncertain_outcome"
	// ReasonBudgetExhausted: the budget of the item's subtree is spent;
	// raising it (lease.Service.SetBudget) closes the request.
	ReasonBudgetExhausted = "budget_exhausted"
	// ReasonNoProgress: a lease heartbeated without its progress changing
	// for the project's no_progress window; the lease was ended.
	ReasonNoProgress = "no_progress"
)

// AnsweredInWords reports whether a request of reason is closed by an
// answer in words. An uncertain outcome is closed by a decision (Decide),
// a spent budget by raising it (or cancelling its item): an answer link or
// an answer box would only be refused.
func AnsweredInWords(reason string) bool {
	return reason != ReasonUncertainOutcome && reason != ReasonBudgetExhausted
}

// Decision is how a person resolves an uncertain_outcome request.
type Decision string

// The decisions on an uncertain outcome.
const (
	// DecisionRetry hands the item out again (the next claim has epoch + 1).
	DecisionRetry Decision = "retry"
	// DecisionDone marks the item done with the person's result.
	DecisionDone Decision = "done"
	// DecisionCancel cancels the item.
	DecisionCancel Decision = "cancel"
)

// Request is an attention request with the title of its item. LeaseID and
// Epoch name the lease it was asked under (for a blocking worker request,
// the lease that ended for it; for a repeated-expiry request, the last lease
// that expired).
type Request struct {
	ID uuid.UUID
	// Seq numbers requests in the order they were opened, across projects.
	Seq              int64
	ProjectID        uuid.UUID
	ItemID           uuid.UUID
	ItemTitle        string
	LeaseID          *uuid.UUID
	Epoch            *int64
	Source           string
	Reason           string
	RequestedBy      string
	Question         string
	SuggestedAnswers []string
	Context          json.RawMessage
	Blocking         bool
	State            State
	Answer           *string
	ResolvedBy       *string
	ResolvedAt       *time.Time
	CreatedAt        time.Time
	// Decision is the choice that resolved an uncertain_outcome request
	// (nil for every other request, and while it is open).
	Decision *Decision
	// DueAt is the request's deadline (nil: none), OverdueAt when the
	// deadline sweeper found it passed, OnOverdue its policy (nil: only
	// the event) and DefaultAnswer the worker's answer for
	// OverdueDefaultAnswer. AnsweredByDefault: the request was answered
	// with it, by "system".
	DueAt             *time.Time
	OverdueAt         *time.Time
	OnOverdue         *string
	DefaultAnswer     *string
	AnsweredByDefault bool
}

// Overdue reports whether r is open past its deadline (as marked by the
// deadline sweeper).
func (r Request) Overdue() bool { return r.State == StateOpen && r.OverdueAt != nil }

// Size is about how many bytes the request takes in a list's answer: its
// texts and JSON values as encoded there (page.TextSize, page.JSONSize),
// and page.RowOverhead for the rest (the byte
// budget of a page, page.MaxBytes).
func (r Request) Size() int {
	n := page.RowOverhead + page.TextSize(r.ItemTitle) + page.TextSize(r.RequestedBy) + page.TextSize(r.Question) + page.JSONSize(r.Context)
	for _, s := range []*string{r.Answer, r.ResolvedBy, r.DefaultAnswer} {
		if s != nil {
			n += page.TextSize(*s)
		}
	}
	for _, s := range r.SuggestedAnswers {
		n += page.TextSize(s) + 1
	}
	return n
}

// NewRequest is the input of Open. Source defaults to "worker" and Reason
// to "question". LeaseID and Epoch are given together or not at all. Worker
// is the worker of the lease that ended for a blocking request and
// WorkerToken the token that lease was granted to (nil: none); together
// they become the item's continuity preference (see the package
// documentation). WorkerToken without a Worker is ignored.
type NewRequest struct {
	Question         string
	SuggestedAnswers []string
	Context          json.RawMessage
	Blocking         bool
	Source           string
	Reason           string
	RequestedBy      string
	LeaseID          *uuid.UUID
	Epoch            *int64
	Worker           string
	WorkerToken      *uuid.UUID
	// DueIn is the request's deadline after its creation (0: none; a
	// worker's question then takes its project's AttentionDueIn, if any).
	DueIn time.Duration
	// OnOverdue is what happens at the deadline besides the
	// attention.overdue event: OverdueEscalate, OverdueDefaultAnswer
	// (answer with DefaultAnswer), OverdueRelease (a blocking request
	// stops blocking), or "" (only the event).
	OnOverdue     string
	DefaultAnswer string
	// MaxOpenOnLease, when positive, refuses the request (too_many_open_requests)
	// while its lease (LeaseID) already has that many open non-blocking
	// requests. The caller holds the lease's row lock, so that concurrent
	// requests of one lease are counted one after another (lease.Ask).
	MaxOpenOnLease int
}

// The policies of an overdue request (NewRequest.OnOverdue).
const (
	OverdueEscalate      = "escalate"
	OverdueDefaultAnswer = "default_answer"
	OverdueRelease       = "release"
)

// Filter selects requests for List. Nil fields do not filter. Limit 0 means
// 50; more than 500 is refused. Cursor is the NextCursor of a previous page.
type Filter struct {
	State  *State
	ItemID *uuid.UUID
	Cursor string
	Limit  int
}

// Page is one page of List; NextCursor is empty on the last page.
type Page struct {
	Requests   []Request
	NextCursor string
}

// Config tunes the service.
type Config struct {
	// ContinuityWindow is how long, after an item's last blocking request
	// is closed, only the worker whose lease ended for it may claim it.
	// Zero means 10 minutes.
	ContinuityWindow time.Duration
}

// DefaultContinuityWindow is the continuity window when Config leaves it 0.
const DefaultContinuityWindow = 10 * time.Minute

func (c Config) window() time.Duration {
	if c.ContinuityWindow <= 0 {
		return DefaultContinuityWindow
	}
	return c.ContinuityWindow
}

// Service answers, dismisses and lists attention requests, and lets people
// put holds on items. Workers open requests through package lease.
//
// Each method runs in its own transaction on a pool, or in a savepoint of
// the caller's transaction when the Service is on one (On).
type Service struct {
	exec  db.Executor
	clock clock.Clock
	cfg   Config
}

// NewService returns a Service on exec (a pool, or a transaction). A nil
// clk means the database clock.
func NewService(exec db.Executor, clk clock.Clock, cfg Config) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{exec: exec, clock: clk, cfg: cfg}
}

// On returns a copy of s that runs on exec, e.g. inside a caller's
// transaction (package lease opens a worker's request in the transaction
// that locks or ends the lease).
func (s *Service) On(exec db.Executor) *Service {
	c := *s
	c.exec = exec
	return &c
}
