package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/workgraph-dev/workgraph/client"
	wgfence "github.com/workgraph-dev/workgraph/fence"
)

// apiClient implements backend over the Go client, for one project.
// Errors the server answered are *client.Error values, passed through.
type apiClient struct {
	c       *client.Client
	project string
}

func (req claimRequest) api() client.ClaimRequest {
	return client.ClaimRequest{
		Worker: req.Worker, LeaseSeconds: req.LeaseSeconds, WaitSeconds: req.WaitSeconds, Labels: req.Labels,
		Capabilities: req.Capabilities,
	}
}

func (a *apiClient) Claim(ctx context.Context, req claimRequest) (*claim, error) {
	cl, err := a.c.Claim(ctx, a.project, req.api())
	if errors.Is(err, client.ErrNothingReady) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t := taskOf(&cl.Item)
	for _, r := range cl.Attention {
		t.Attention = append(t.Attention, questionOf(r))
	}
	t.OlderAttention = cl.OlderAttention
	t.Fence = &fenceOut{
		Token:           cl.FenceToken,
		OperationPrefix: cl.Item.ID + "/",
		KeysURL:         strings.TrimRight(a.c.BaseURL(), "/") + wgfence.KeysPath,
	}
	return &claim{
		Fence:      fence{LeaseID: cl.Lease.ID, Epoch: cl.Lease.Epoch},
		AcquiredAt: cl.Lease.AcquiredAt,
		ExpiresAt:  cl.Lease.ExpiresAt,
		Task:       t,
	}, nil
}

func (a *apiClient) WhyNothing(ctx context.Context, req claimRequest) []string {
	why, err := a.c.NotClaimedReasons(ctx, a.project, req.api(), nil)
	if err != nil {
		return nil
	}
	return why
}

func (a *apiClient) Heartbeat(ctx context.Context, f fence, note string, u *usage) (*beat, error) {
	req := client.HeartbeatRequest{Epoch: f.Epoch, Usage: usageOf(u)}
	if note != "" {
		p, err := json.Marshal(map[string]string{"note": note})
		if err != nil {
			return nil, err
		}
		req.Progress = p
	}
	hb, err := a.c.Heartbeat(ctx, f.LeaseID, req)
	if err != nil {
		return nil, err
	}
	b := &beat{ExpiresAt: hb.ExpiresAt, StopRequested: hb.StopRequested,
		BudgetSpent: hb.StopReason != nil && *hb.StopReason == "budget_exhausted"}
	if hb.Lease.StopNote != nil {
		b.StopNote = *hb.Lease.StopNote
	}
	for _, r := range hb.Answers {
		b.Answers = append(b.Answers, questionOf(r))
	}
	return b, nil
}

func (a *apiClient) Complete(ctx context.Context, f fence, result json.RawMessage, u *usage) error {
	_, err := a.c.Complete(ctx, f.LeaseID, client.CompleteRequest{Epoch: f.Epoch, Result: result, Usage: usageOf(u)})
	return err
}

func usageOf(u *usage) *client.Usage {
	if u == nil {
		return nil
	}
	return &client.Usage{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostUSD: u.CostUSD, ToolCalls: u.ToolCalls}
}

func (a *apiClient) Release(ctx context.Context, f fence, reason string) error {
	_, err := a.c.Release(ctx, f.LeaseID, client.ReleaseRequest{Epoch: f.Epoch, Reason: reason})
	return err
}

func (a *apiClient) Fail(ctx context.Context, f fence, message string) (failed, error) {
	res, err := a.c.Fail(ctx, f.LeaseID, client.FailRequest{Epoch: f.Epoch, Error: message})
	if err != nil {
		return failed{}, err
	}
	return failed{RetryAfter: res.RetryAfter, AskedPerson: res.Attention != nil}, nil
}

func (a *apiClient) Decompose(ctx context.Context, f fence, subtasks []subtask) ([]taskRef, error) {
	req := client.DecomposeRequest{Epoch: f.Epoch}
	for _, s := range subtasks {
		req.Children = append(req.Children, client.Child{Key: s.Key, Title: s.Title, Body: s.Body, DependsOnKeys: s.DependsOn,
			Requires: s.Requires, Touches: s.Touches})
	}
	res, err := a.c.Decompose(ctx, f.LeaseID, req)
	if err != nil {
		return nil, err
	}
	refs := make([]taskRef, 0, len(res.Children))
	for i := range res.Children {
		refs = append(refs, refOf(&res.Children[i]))
	}
	return refs, nil
}

func (a *apiClient) Ask(ctx context.Context, f fence, q askInput) (string, error) {
	out, err := a.c.Ask(ctx, f.LeaseID, client.AskRequest{
		Epoch: f.Epoch, Question: q.Question, SuggestedAnswers: q.Suggested, Blocking: q.Blocking,
		DueInSeconds: q.DueIn, OnOverdue: q.OnOverdue, DefaultAnswer: q.Default,
	})
	if err != nil {
		return "", err
	}
	return out.Attention.ID, nil
}

func (a *apiClient) CreateTask(ctx context.Context, in createInput) (*taskRef, error) {
	req := client.CreateItemRequest{
		Title: in.Title, Body: in.Body, ParentID: in.ParentID, DependsOn: in.DependsOn, Labels: in.Labels,
		Requires: in.Requires, Touches: in.Touches,
	}
	if in.Priority != 0 {
		req.Priority = &in.Priority
	}
	it, err := a.c.CreateItem(ctx, a.project, req)
	if err != nil {
		return nil, err
	}
	r := refOf(it)
	return &r, nil
}

func (a *apiClient) AddDependency(ctx context.Context, taskID, dependsOn string) error {
	return a.c.AddDependency(ctx, a.project, taskID, dependsOn)
}

func (a *apiClient) GetTask(ctx context.Context, id string) (*task, error) {
	it, err := a.c.GetItem(ctx, a.project, id)
	if err != nil {
		return nil, err
	}
	t := taskOf(it)
	return &t, nil
}

func (a *apiClient) ListTasks(ctx context.Context, in listInput) (*taskPage, error) {
	page, err := a.c.ListItems(ctx, a.project, client.ListItemsOptions{
		State: in.State, Label: in.Label, ParentID: in.ParentID, Cursor: in.Cursor,
	})
	if err != nil {
		return nil, err
	}
	out := &taskPage{Tasks: make([]taskRef, 0, len(page.Items))}
	if page.NextCursor != nil {
		out.NextCursor = *page.NextCursor
	}
	for i := range page.Items {
		out.Tasks = append(out.Tasks, refOf(&page.Items[i]))
	}
	return out, nil
}

// taskOf is the agent's view of an item: everything but the epoch.
func taskOf(it *client.Item) task {
	t := task{
		ID: it.ID, Title: it.Title, Body: it.Body, State: it.State, Priority: it.Priority,
		Labels: it.Labels, Requires: it.Requires, Touches: it.Touches,
	}
	if len(it.Result) > 0 && string(it.Result) != "null" {
		t.Result = it.Result
	}
	if it.ParentID != nil {
		t.ParentID = *it.ParentID
	}
	if !it.BlockedBy.Empty() {
		t.BlockedBy = blockedByOf(it.BlockedBy)
	}
	return t
}

func refOf(it *client.Item) taskRef {
	return taskRef{ID: it.ID, Title: it.Title, State: it.State, Priority: it.Priority, Labels: it.Labels}
}

func questionOf(r client.AttentionRequest) question {
	q := question{ID: r.ID, Question: r.Question, State: r.State}
	if r.Answer != nil {
		q.Answer = *r.Answer
	}
	return q
}

// blockedByOf re-encodes what blocks an item, keeping only non-empty parts.
func blockedByOf(b client.BlockedBy) json.RawMessage {
	m := map[string]any{}
	for name, refs := range map[string][]client.ItemRef{"dependencies": b.Dependencies, "children": b.Children} {
		if len(refs) > 0 {
			m[name] = refs
		}
	}
	if len(b.Attention) > 0 {
		m["attention"] = b.Attention
	}
	if b.RetryAfter != nil {
		m["retry_after"] = b.RetryAfter
	}
	if b.ReservedFor != nil {
		m["reserved_for"] = b.ReservedFor
	}
	if b.ReservedUntil != nil {
		m["reserved_until"] = b.ReservedUntil
	}
	if len(b.Scopes) > 0 {
		m["scopes"] = b.Scopes
	}
	out, _ := json.Marshal(m)
	return out
}
