package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/page"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
)

// Outcome is how a lease ended. Every ended lease has exactly one.
type Outcome string

// The outcomes of a lease.
const (
	OutcomeCompleted          Outcome = "completed"
	OutcomeReleased           Outcome = "released"
	OutcomeFailed             Outcome = "failed"
	OutcomeCancelled          Outcome = "cancelled"
	OutcomeDecomposed         Outcome = "decomposed"
	OutcomeAttentionRequested Outcome = "attention_requested"
	OutcomeExpired            Outcome = "expired"
)

func (o Outcome) valid() bool {
	switch o {
	case OutcomeCompleted, OutcomeReleased, OutcomeFailed, OutcomeCancelled,
		OutcomeDecomposed, OutcomeAttentionRequested, OutcomeExpired:
		return true
	}
	return false
}

// Lease is one grant of an item to a worker, kept forever. While EndedAt is
// nil the lease is active (it may still be past ExpiresAt until a claim or
// the sweeper ends it as expired). WorkerTime is the worker's own clock at
// its last report: diagnostic only. StaleCalls counts the reports about this
// lease that were refused (calls after it was lost, conflicting results).
type Lease struct {
	ID            uuid.UUID
	ProjectID     uuid.UUID
	ItemID        uuid.UUID
	Epoch         int64
	Worker        string
	Principal     string
	TokenID       *uuid.UUID
	AcquiredAt    time.Time
	ExpiresAt     time.Time
	HeartbeatAt   *time.Time
	Heartbeats    int32
	Progress      json.RawMessage
	WorkerTime    *time.Time
	StopRequested bool
	// StopNote is the reason given with the stop request (nil: none).
	StopNote      *string
	EndedAt       *time.Time
	Outcome       *Outcome
	OutcomeDetail json.RawMessage
	Result        json.RawMessage
	StaleCalls    int
	// Usage is the largest usage the worker reported on this lease.
	Usage Usage
	// ProgressAt is when the progress marker last changed (database
	// clock); nil: not since the claim.
	ProgressAt *time.Time
	// BudgetRoots are the budgeted items whose subtree holds the item.
	BudgetRoots []uuid.UUID
	// Scopes are the write scopes the lease holds while it is live (its
	// item's touches at the claim).
	Scopes []string
}

// Size is about how many bytes the lease takes in a list's answer: its
// texts and JSON values as encoded there (page.TextSize, page.JSONSize),
// and page.RowOverhead for the rest (the byte budget of a page,
// page.MaxBytes).
func (l Lease) Size() int {
	n := page.RowOverhead + page.TextSize(l.Worker) + page.TextSize(l.Principal) +
		page.JSONSize(l.Progress) + page.JSONSize(l.OutcomeDetail) + page.JSONSize(l.Result)
	if l.StopNote != nil {
		n += page.TextSize(*l.StopNote)
	}
	for _, s := range l.Scopes {
		n += page.TextSize(s) + 1
	}
	return n + 40*len(l.BudgetRoots)
}

// Fence is what every worker mutation presents: the lease id and the epoch
// the claim returned.
type Fence struct {
	LeaseID uuid.UUID
	Epoch   int64
}

// Config bounds leases. Zero fields take the defaults in brackets.
type Config struct {
	MinTTL     time.Duration // shortest lease a claim may ask for [1s]
	MaxTTL     time.Duration // longest [24h], at most TTLCeiling
	DefaultTTL time.Duration // when the claim names none [15m]
	// MaxFailures consecutive failures open a system attention request
	// instead of another retry [3].
	MaxFailures int
	// RetryBackoff after the first failure, doubled after each further one
	// up to MaxRetryBackoff [30s, 30m].
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// MaxExpiries consecutive expiries of one item open a system attention
	// request instead of handing it out again [3].
	MaxExpiries int
	// MaxActivePerToken bounds the live leases of one API token [0 =
	// unlimited].
	MaxActivePerToken int
	// WaitRecheck is how often a waiting claim (ClaimWait) tries again
	// without a notification, to catch time gates (retry backoff, continuity
	// window) that open without a write [5s].
	WaitRecheck time.Duration
}

// TTLCeiling is the longest lease any Config may allow: a larger MaxTTL is
// lowered to it, and the API refuses a longer lease_seconds before it
// converts the number to a duration.
const TTLCeiling = 7 * 24 * time.Hour

// Check reports lease bounds that would refuse claims whatever they ask,
// after the defaults: MinTTL above MaxTTL, or DefaultTTL outside them.
// Its errors name the server's flags (lease-min, lease-max,
// lease-default).
func (c Config) Check() error {
	d := c.withDefaults()
	switch {
	case d.MinTTL > d.MaxTTL:
		return fmt.Errorf("lease-min %s is above lease-max %s: no lease length would be allowed", d.MinTTL, d.MaxTTL)
	case d.DefaultTTL > d.MaxTTL:
		return fmt.Errorf("lease-default %s is above lease-max %s: every claim naming no lease length would be refused", d.DefaultTTL, d.MaxTTL)
	case d.DefaultTTL < d.MinTTL:
		return fmt.Errorf("lease-default %s is below lease-min %s: every claim naming no lease length would be refused", d.DefaultTTL, d.MinTTL)
	}
	return nil
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.MinTTL, time.Second)
	def(&c.MaxTTL, 24*time.Hour)
	c.MaxTTL = min(c.MaxTTL, TTLCeiling)
	def(&c.DefaultTTL, 15*time.Minute)
	def(&c.RetryBackoff, 30*time.Second)
	def(&c.MaxRetryBackoff, 30*time.Minute)
	def(&c.WaitRecheck, 5*time.Second)
	if c.MaxFailures <= 0 {
		c.MaxFailures = 3
	}
	if c.MaxExpiries <= 0 {
		c.MaxExpiries = 3
	}
	return c
}

// ClaimRequest asks for the next ready item. Worker is the stable label of
// the worker (1 to 200 bytes); TTL 0 means Config.DefaultTTL; Labels, when
// given, must all be on the item. Principal (who authenticated) defaults to
// Worker; TokenID is the API token, counted against MaxActivePerToken.
type ClaimRequest struct {
	Worker string
	TTL    time.Duration
	Labels []string
	// Capabilities are what the worker can do: only items whose requires
	// are all among them are handed out (none: only items that require
	// nothing). Validated as labels.
	Capabilities []string
	Principal    string
	TokenID      *uuid.UUID
}

// Claim is a granted lease with its item and the item's latest attention
// requests (questions and answers, at most ClaimHistory of them, oldest
// first), so a worker resumes with a person's answer. OlderAttention says
// that the item has older requests than those (read them a page at a time
// with attention.Service.ForItem, GET .../items/{id}/attention).
type Claim struct {
	Lease          Lease
	Item           graph.Item
	Attention      []attention.Request
	OlderAttention bool
}

// ClaimHistory is how many of its item's latest attention requests a
// claim hands the worker (fewer when they pass page.MaxBytes): an item
// that collected thousands of questions costs a claim no more than this.
const ClaimHistory = 20

// MaxOpenQuestions is how many open (unanswered) non-blocking questions a
// lease may have at once (Ask): one more is refused with
// too_many_open_requests until a person answers or dismisses one. A
// blocking question ends the lease, so it is never refused for this.
const MaxOpenQuestions = 20

// ErrNothingReady is returned by Claim and ClaimWait when no item is ready
// for the request (the API answers 204).
var ErrNothingReady = errors.New("lease: nothing is ready to claim")

// Heartbeat renews a lease. TTL 0 keeps the lease's current TTL. Progress
// (JSON) replaces the stored progress when given; WorkerTime is diagnostic.
type Heartbeat struct {
	Progress   json.RawMessage
	WorkerTime *time.Time
	TTL        time.Duration
	// Usage is the lease's usage so far (see Usage); the zero value
	// reports none.
	Usage Usage
}

// HeartbeatResult is the renewed lease, whether a person asked the worker to
// stop, and the closed non-blocking attention requests of this lease: the
// newest attention.AnswersPerHeartbeat of them, oldest first (every
// heartbeat repeats them; the worker tells them apart by id). OlderAnswers
// says the lease has older ones.
type HeartbeatResult struct {
	Lease         Lease
	StopRequested bool
	// StopReason says why the worker should stop: StopByPerson or
	// StopBudgetExhausted ("" when it need not).
	StopReason   string
	Answers      []attention.Request
	OlderAnswers bool
}

// Why a heartbeat answers stop (HeartbeatResult.StopReason).
const (
	StopByPerson        = "requested"
	StopBudgetExhausted = "budget_exhausted"
)

// Completion is a completed lease and its done item. Replayed is true when
// the call repeated an already committed identical completion.
type Completion struct {
	Lease    Lease
	Item     graph.Item
	Replayed bool
}

// Failure is a worker's report that it could not do the item.
type Failure struct {
	Message    string
	Details    json.RawMessage
	WorkerTime *time.Time
}

// FailResult is the failed lease and the item after it: back in circulation
// after RetryAfter, or waiting for a person (Attention) after too many
// consecutive failures.
type FailResult struct {
	Lease      Lease
	Item       graph.Item
	RetryAfter *time.Time
	Attention  *attention.Request
}

// Decomposition is a lease ended as decomposed and the children it created.
type Decomposition struct {
	Lease    Lease
	Children []graph.Item
}

// AskResult is an opened attention request and the lease after it (ended as
// attention_requested for a blocking request, still active otherwise).
type AskResult struct {
	Request attention.Request
	Lease   Lease
}

// HistoryFilter selects leases for History. Empty fields do not filter;
// Since and Until bound AcquiredAt (Since inclusive, Until exclusive).
// Limit 0 means 50; more than 500 is refused.
type HistoryFilter struct {
	ItemID  *uuid.UUID
	Worker  string
	Outcome *Outcome
	Since   *time.Time
	Until   *time.Time
	Cursor  string
	Limit   int
	// Order is the order of the page (the zero value: grant order).
	Order HistoryOrder
}

// Page is one page of History; NextCursor is empty on the last page.
type Page struct {
	Leases     []Lease
	NextCursor string
}

// Observation is a refused report about a lease, kept for people to see:
// kind "stale_call" (a call presenting a lease that was lost) or
// "conflicting_result" (a completion whose result differs from the
// committed one). Only the first few of each kind per lease are kept;
// Lease.StaleCalls has the count.
type Observation struct {
	ID         uuid.UUID
	LeaseID    uuid.UUID
	Epoch      int64
	Kind       string
	Operation  string
	ReceivedAt time.Time
	WorkerTime *time.Time
	Payload    json.RawMessage
}

// WorkerStat summarises one worker label's leases in a project.
type WorkerStat struct {
	Worker   string
	Active   int
	Outcomes map[Outcome]int
	LastSeen time.Time
}

// Service grants leases and applies fenced worker mutations.
//
// Each method runs in its own transaction on a pool, or in a savepoint of
// the caller's transaction when the Service is on one (On). The graph and
// attention work of a mutation runs in the mutation's transaction, through
// those packages' services On it.
type Service struct {
	exec   db.Executor
	clock  clock.Clock
	cfg    Config
	offers *offerCache
}

// NewService returns a Service on exec (a pool, or a transaction). A nil
// clk means the database clock.
func NewService(exec db.Executor, clk clock.Clock, cfg Config) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{exec: exec, clock: clk, cfg: cfg.withDefaults(), offers: &offerCache{}}
}

// On returns a copy of s that runs on exec, e.g. inside a caller's
// transaction.
func (s *Service) On(exec db.Executor) *Service {
	c := *s
	c.exec = exec
	return &c
}

// graphOn is the graph service inside tx, on s's clock.
func (s *Service) graphOn(tx db.Executor) *graph.Service {
	return graph.NewService(tx, s.clock)
}

// attentionOn is the attention service inside tx, on s's clock. Its
// Config is the zero one: the lease service only opens and reads requests,
// which no attention setting touches; the continuity window applies when a
// request is closed (Resolve, Decide), on the attention service its owner
// configures (server.Config.Attention).
func (s *Service) attentionOn(tx db.Executor) *attention.Service {
	return attention.NewService(tx, s.clock, attention.Config{})
}
