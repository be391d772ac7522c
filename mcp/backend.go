package mcp

import (
	"context"
	"encoding/json"
	"time"
)

// backend is the slice of the workgraph API the tools use, in the terms the
// agent sees. The implementation over the Go client is in client.go; it is
// an interface only so that the tool code reads in one vocabulary.
type backend interface {
	// Claim takes the next ready task of the project. It answers nil, nil
	// when nothing became ready within req.WaitSeconds.
	Claim(ctx context.Context, req claimRequest) (*claim, error)
	// WhyNothing says why ready tasks were out of req's reach after a
	// claim found nothing (none: nothing ready stood in its way, or the
	// read failed).
	WhyNothing(ctx context.Context, req claimRequest) []string
	// Heartbeat extends the lease. It answers wgerr.LeaseLost when the
	// fence is refused.
	// usage (nil: none) is the lease's usage so far, monotonic.
	Heartbeat(ctx context.Context, f fence, progress string, usage *usage) (*beat, error)
	Complete(ctx context.Context, f fence, result json.RawMessage, usage *usage) error
	Release(ctx context.Context, f fence, reason string) error
	// Fail reports the attempt failed; it answers what that leaves.
	Fail(ctx context.Context, f fence, message string) (failed, error)
	Decompose(ctx context.Context, f fence, subtasks []subtask) ([]taskRef, error)
	// Ask opens an attention request on the leased task; a blocking one
	// ends the lease.
	Ask(ctx context.Context, f fence, q askInput) (string, error)
	CreateTask(ctx context.Context, in createInput) (*taskRef, error)
	AddDependency(ctx context.Context, taskID, dependsOn string) error
	GetTask(ctx context.Context, id string) (*task, error)
	ListTasks(ctx context.Context, in listInput) (*taskPage, error)
}

// failed is what a reported failure leaves: a retry from RetryAfter, or,
// after too many failures in a row, a question to a person.
type failed struct {
	RetryAfter  *time.Time
	AskedPerson bool
}

// fence is what a worker call presents. Only the session sees it.
type fence struct {
	LeaseID string
	Epoch   int64
}

type claimRequest struct {
	Worker       string
	LeaseSeconds int
	WaitSeconds  int
	Labels       []string
	Capabilities []string
}

// claim is a granted lease and its task.
type claim struct {
	Fence      fence
	AcquiredAt time.Time
	ExpiresAt  time.Time
	Task       task
}

// beat is the answer to a heartbeat.
type beat struct {
	ExpiresAt     time.Time
	StopRequested bool
	// BudgetSpent: the stop is because a budget over the task is spent.
	BudgetSpent bool
	// StopNote is the reason the person who asked for the stop gave ("":
	// none).
	StopNote string
	Answers  []question
}

// usage is what the agent reports having spent on its task so far.
type usage struct {
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	ToolCalls int64   `json:"tool_calls,omitempty"`
}

// task is what an agent sees of an item: never its epoch or lease.
type task struct {
	ID        string          `json:"id"`
	Title     string          `json:"title"`
	Body      string          `json:"body,omitempty"`
	State     string          `json:"state"`
	Priority  int             `json:"priority,omitempty"`
	Labels    []string        `json:"labels,omitempty"`
	Requires  []string        `json:"requires,omitempty"`
	Touches   []string        `json:"touches,omitempty"`
	ParentID  string          `json:"parent_id,omitempty"`
	BlockedBy json.RawMessage `json:"blocked_by,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	// Attention is the task's questions to people and their answers,
	// oldest first: in take_task's answer, the latest 20 of them, and
	// OlderAttention says that the task has older ones.
	Attention      []question `json:"attention,omitempty"`
	OlderAttention bool       `json:"older_attention,omitempty"`
	// Fence, only in take_task's answer, is what the holder sends to the
	// systems it changes so they can refuse it once a newer attempt wrote
	// (docs/agents.md, "Fencing your effects").
	Fence *fenceOut `json:"fence,omitempty"`
}

// fenceOut is the lease's fence for the systems an agent changes.
type fenceOut struct {
	// Token is the lease's signed fence token: send it as the
	// Workgraph-Fence header.
	Token string `json:"token"`
	// OperationPrefix starts the operation ids sent as Workgraph-Operation
	// (the same for every attempt at the task).
	OperationPrefix string `json:"operation_prefix"`
	// KeysURL is where a destination fetches the keys that check Token.
	KeysURL string `json:"keys_url"`
}

// taskRef is a task in a list.
type taskRef struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	State    string   `json:"state"`
	Priority int      `json:"priority,omitempty"`
	Labels   []string `json:"labels,omitempty"`
}

type taskPage struct {
	Tasks      []taskRef `json:"tasks"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// question is an attention request as the agent sees it.
type question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	State    string `json:"state"`
	Answer   string `json:"answer,omitempty"`
}
