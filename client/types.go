package client

import "github.com/workgraph-dev/workgraph/wire"

// The answers of the API are the types of package wire, shared with the
// server; these aliases keep the client's names.

// Item states, as the server derives them.
const (
	StateReady     = wire.StateReady
	StateLeased    = wire.StateLeased
	StateBlocked   = wire.StateBlocked
	StateAttention = wire.StateAttention
	StateDone      = wire.StateDone
	StateCancelled = wire.StateCancelled
)

// Lease outcomes: every ended lease has exactly one.
const (
	OutcomeCompleted          = wire.OutcomeCompleted
	OutcomeReleased           = wire.OutcomeReleased
	OutcomeFailed             = wire.OutcomeFailed
	OutcomeCancelled          = wire.OutcomeCancelled
	OutcomeDecomposed         = wire.OutcomeDecomposed
	OutcomeAttentionRequested = wire.OutcomeAttentionRequested
	OutcomeExpired            = wire.OutcomeExpired
)

type (
	// Project is the unit of tenancy.
	Project = wire.Project
	// Token is an API token (never its secret).
	Token = wire.Token
	// CreatedToken is a new token with its secret, shown only once.
	CreatedToken = wire.CreatedToken
	// IDMatch is an object whose id starts with a looked-up prefix.
	IDMatch = wire.IDMatch
	// Item is a work item.
	Item = wire.Item
	// BlockedBy explains why an item is not ready.
	BlockedBy = wire.BlockedBy
	// ItemRef names an item.
	ItemRef = wire.ItemRef
	// ScopeHolder is a live lease holding write scopes that overlap an
	// item's touches.
	ScopeHolder = wire.ScopeHolder
	// AttentionRef names an open blocking attention request of an item.
	AttentionRef = wire.AttentionRef
	// ItemPage is one page of items; NextCursor is nil on the last page.
	ItemPage = wire.ItemPage
	// Lease is one claim of an item; kept forever once ended.
	Lease = wire.Lease
	// LeaseDetail is a lease with its refused reports.
	LeaseDetail = wire.LeaseDetail
	// LeasePage is one page of lease history, oldest first.
	LeasePage = wire.LeasePage
	// Claim is a granted lease, its item and the item's attention history.
	Claim = wire.Claim
	// Heartbeat is the answer to a heartbeat.
	Heartbeat = wire.Heartbeat
	// Usage is what a worker spent (tokens, dollars, tool calls).
	Usage = wire.Usage
	// Budget is an item's budget for its subtree and its ledger.
	Budget = wire.Budget
	// BudgetRequest is the limits of SetBudget.
	BudgetRequest = wire.BudgetRequest
	// ItemCost is what an item and its subtree spent.
	ItemCost = wire.ItemCost
	// LeaseActivity is the liveness of a live lease (healthy, quiet, stale).
	LeaseActivity = wire.LeaseActivity
	// Completion is the answer to complete.
	Completion = wire.Completion
	// LeaseItem is the answer to release.
	LeaseItem = wire.LeaseItem
	// FailResult is the answer to fail.
	FailResult = wire.FailResult
	// Decomposition is the answer to decompose.
	Decomposition = wire.Decomposition
	// AskResult is the answer to asking a person.
	AskResult = wire.AskResult
	// AttentionRequest is a question for a person about an item.
	AttentionRequest = wire.AttentionRequest
	// AttentionPage is one page of attention requests, oldest first.
	AttentionPage = wire.AttentionPage
	// ItemGraph is an item's neighbourhood and the critical path through
	// it.
	ItemGraph = wire.ItemGraph
	// Subgraph is a project's graph, or the part of it around an item.
	Subgraph = wire.Subgraph
	// Edge is one edge of a Subgraph.
	Edge = wire.Edge
	// Workers is the project's live leases and per-worker statistics.
	Workers = wire.Workers
	// WorkerStat is one worker's outcome counts and usage.
	WorkerStat = wire.WorkerStat
	// PlanResult is what a plan created.
	PlanResult = wire.PlanResult
	// ExistingItem is a plan key that existed already (left alone).
	ExistingItem = wire.ExistingItem
)

// What an expired lease means for its item (Item.OnExpiry,
// Project.OnExpiry).
const (
	OnExpiryRetry     = wire.OnExpiryRetry
	OnExpiryReconcile = wire.OnExpiryReconcile
)

// The decisions on an uncertain outcome (Client.Decide).
const (
	DecisionRetry  = wire.DecisionRetry
	DecisionDone   = wire.DecisionDone
	DecisionCancel = wire.DecisionCancel
)

// The request bodies are wire's too.
type (
	CreateProjectRequest = wire.CreateProjectRequest
	CreateTokenRequest   = wire.CreateTokenRequest
	CreateItemRequest    = wire.CreateItemRequest
	UpdateItemRequest    = wire.UpdateItemRequest
	CancelRequest        = wire.CancelRequest
	AddDependencyRequest = wire.AddDependencyRequest
	HoldRequest          = wire.HoldRequest
	ClaimRequest         = wire.ClaimRequest
	HeartbeatRequest     = wire.HeartbeatRequest
	CompleteRequest      = wire.CompleteRequest
	ReleaseRequest       = wire.ReleaseRequest
	FailRequest          = wire.FailRequest
	Child                = wire.Child
	DecomposeRequest     = wire.DecomposeRequest
	AskRequest           = wire.AskRequest
	StopRequest          = wire.StopRequest
	ResolveRequest       = wire.ResolveRequest
	DismissRequest       = wire.DismissRequest
	UpdateProjectRequest = wire.UpdateProjectRequest
	PlanItem             = wire.PlanItem
	PlanRequest          = wire.PlanRequest
)
