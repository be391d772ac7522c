package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountLeases(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/leases/:id/heartbeat", a.heartbeat, workersLazy)
	a.handle(e, http.MethodPost, "/leases/:id/complete", a.complete, workersLazy)
	a.handle(e, http.MethodPost, "/leases/:id/release", a.release, workers)
	a.handle(e, http.MethodPost, "/leases/:id/fail", a.fail, workers)
	a.handle(e, http.MethodPost, "/leases/:id/decompose", a.decompose, workers)
	a.handle(e, http.MethodPost, "/leases/:id/attention", a.ask, workers)
	a.handle(e, http.MethodPost, "/leases/:id/stop", a.requestStop, people)
	a.handle(e, http.MethodGet, "/leases/:id", a.getLease, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/leases", a.leaseHistory, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/items/:id/leases", a.itemLeases, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/workers", a.workers, anyRole)
}

// leaseProject resolves the {id} of a /leases route to the lease's project,
// refusing (as not found) a lease of a project the caller may not see.
func (a *API) leaseProject(c echo.Context) (project, id uuid.UUID, err error) {
	return a.resourceProject(c, "lease", func(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
		h, err := a.leaseHolder(ctx, id)
		return h.project, err
	})
}

// fenced decodes a lease mutation's body, checks its epoch and resolves
// the lease: the Fence every mutation presents.
func (a *API) fenced(c echo.Context, body any, epoch func() *int64) (uuid.UUID, lease.Fence, error) {
	if err := decode(c, body); err != nil {
		return uuid.Nil, lease.Fence{}, err
	}
	e, err := requireEpoch(epoch())
	if err != nil {
		return uuid.Nil, lease.Fence{}, err
	}
	id, err := routeID(c, "lease")
	if err != nil {
		return uuid.Nil, lease.Fence{}, err
	}
	h, err := a.leaseHolder(c.Request().Context(), id)
	if err != nil {
		return uuid.Nil, lease.Fence{}, err
	}
	project, token := h.project, h.token
	if err := seeProject(c, project, "lease", id); err != nil {
		return uuid.Nil, lease.Fence{}, err
	}
	// An agent acts only on the leases granted to its own token; the lease id
	// and epoch are a fence, not a credential.
	p := principal(c)
	if p.Role == auth.RoleAgent && (token == nil || *token != p.TokenID) {
		return uuid.Nil, lease.Fence{}, wgerr.New(wgerr.CodeForbidden,
			"lease %s was granted to another token; an agent may only act on its own leases", id)
	}
	tag(c, telemetry.Tags{Project: project, Lease: id, Epoch: e})
	return project, lease.Fence{LeaseID: id, Epoch: e}, nil
}

// workerTime parses an optional worker-supplied RFC 3339 time (diagnostic
// only).
func workerTime(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil, wgerr.InvalidField("worker_time", "must be an RFC 3339 time, got %q", *s)
	}
	return &t, nil
}

type heartbeatRequest struct {
	Epoch        *int64          `json:"epoch"`
	Progress     json.RawMessage `json:"progress"`
	LeaseSeconds *int64          `json:"lease_seconds"`
	WorkerTime   *string         `json:"worker_time"`
	Usage        *wire.Usage     `json:"usage"`
}

func (a *API) heartbeat(c echo.Context) error {
	var req heartbeatRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	wt, err := workerTime(req.WorkerTime)
	if err != nil {
		return err
	}
	ttl, err := leaseSeconds(req.LeaseSeconds)
	if err != nil {
		return err
	}
	res, err := a.svc.Leases.Heartbeat(c.Request().Context(), project, f, lease.Heartbeat{
		Progress: req.Progress, WorkerTime: wt, TTL: ttl, Usage: usageOf(req.Usage),
	})
	if err != nil {
		return renameFields(err, map[string]string{"ttl": "lease_seconds"})
	}
	tag(c, telemetry.Tags{Item: res.Lease.ItemID})
	ft, err := a.fenceToken(res.Lease)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.Heartbeat{
		Lease: leaseView(res.Lease), ExpiresAt: res.Lease.ExpiresAt, StopRequested: res.StopRequested, StopReason: stopReason(res),
		Answers: attentionViews(res.Answers), OlderAnswers: res.OlderAnswers, FenceToken: ft,
	})
}

type completeRequest struct {
	Epoch      *int64          `json:"epoch"`
	Result     json.RawMessage `json:"result"`
	WorkerTime *string         `json:"worker_time"`
	Usage      *wire.Usage     `json:"usage"`
}

// complete: 200 {lease, item, replayed}; an identical repeat answers
// replayed: true, a different result 409 conflicting_result.
func (a *API) complete(c echo.Context) error {
	var req completeRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	wt, err := workerTime(req.WorkerTime)
	if err != nil {
		return err
	}
	res, err := a.svc.Leases.CompleteWithUsage(c.Request().Context(), project, f, req.Result, wt, usageOf(req.Usage))
	if err != nil {
		return err
	}
	tag(c, telemetry.Tags{Item: res.Lease.ItemID})
	return c.JSON(http.StatusOK, wire.Completion{Lease: leaseView(res.Lease), Item: itemView(res.Item), Replayed: res.Replayed})
}

type releaseRequest struct {
	Epoch  *int64 `json:"epoch"`
	Reason string `json:"reason"`
}

// release hands the item back at once: 200 {lease, item}.
func (a *API) release(c echo.Context) error {
	var req releaseRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := a.svc.Leases.Release(ctx, project, f, req.Reason)
	if err != nil {
		return err
	}
	tag(c, telemetry.Tags{Item: l.ItemID})
	it, err := a.svc.Graph.Item(ctx, project, l.ItemID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.LeaseItem{Lease: leaseView(l), Item: itemView(it)})
}

type failRequest struct {
	Epoch *int64 `json:"epoch"`
	// Error says what went wrong (optional): a string, or an object whose
	// "message" string is the message and which is kept as the details.
	Error      json.RawMessage `json:"error"`
	Details    json.RawMessage `json:"details"`
	WorkerTime *string         `json:"worker_time"`
}

// failure reads fail's error and details into a lease.Failure.
func (r failRequest) failure() (lease.Failure, error) {
	out := lease.Failure{Details: r.Details}
	raw := bytes.TrimSpace(r.Error)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &out.Message); err != nil {
			return out, wgerr.InvalidField("error", "must be a string or an object")
		}
	case raw[0] == '{':
		if len(r.Details) > 0 {
			return out, wgerr.InvalidField("error", "an object error is itself the details; do not give details too")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return out, wgerr.InvalidField("error", "must be a string or an object")
		}
		if m, ok := obj["message"]; ok {
			_ = json.Unmarshal(m, &out.Message) // a non-string message stays in the details only
		}
		out.Details = json.RawMessage(raw)
	default:
		return out, wgerr.InvalidField("error", "must be a string or an object")
	}
	return out, nil
}

// fail: 200 {lease, item, retry_after, attention}: the item comes back
// after retry_after, or waits for a person after too many failures.
func (a *API) fail(c echo.Context) error {
	var req failRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	in, err := req.failure()
	if err != nil {
		return err
	}
	if in.WorkerTime, err = workerTime(req.WorkerTime); err != nil {
		return err
	}
	res, err := a.svc.Leases.Fail(c.Request().Context(), project, f, in)
	if err != nil {
		return renameFields(err, map[string]string{"message": "error"})
	}
	out := wire.FailResult{Lease: leaseView(res.Lease), Item: itemView(res.Item), RetryAfter: res.RetryAfter}
	if res.Attention != nil {
		v := attentionView(*res.Attention)
		out.Attention = &v
	}
	return c.JSON(http.StatusOK, out)
}

type childRequest struct {
	Key           *string  `json:"key"`
	Title         *string  `json:"title"`
	Body          string   `json:"body"`
	Priority      int32    `json:"priority"`
	Labels        []string `json:"labels"`
	Requires      []string `json:"requires"`
	Touches       []string `json:"touches"`
	DependsOnKeys []string `json:"depends_on_keys"`
}

type decomposeRequest struct {
	Epoch    *int64         `json:"epoch"`
	Children []childRequest `json:"children"`
}

// decompose splits the item into children and ends the lease as
// decomposed: 200 {lease, children}.
func (a *API) decompose(c echo.Context) error {
	var req decomposeRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	if len(req.Children) == 0 {
		return wgerr.InvalidField("children", "must list at least one child")
	}
	kids := make([]graph.NewChild, len(req.Children))
	for i, ch := range req.Children {
		if ch.Key == nil {
			return wgerr.InvalidField(fmt.Sprintf("children[%d].key", i), "is required")
		}
		if ch.Title == nil {
			return wgerr.InvalidField(fmt.Sprintf("children[%d].title", i), "is required")
		}
		kids[i] = graph.NewChild{Key: *ch.Key, Title: *ch.Title, Body: ch.Body, Priority: ch.Priority, Labels: ch.Labels,
			Requires: ch.Requires, Touches: ch.Touches, DependsOnKeys: ch.DependsOnKeys}
	}
	res, err := a.svc.Leases.Decompose(c.Request().Context(), project, f, kids)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.Decomposition{Lease: leaseView(res.Lease), Children: itemViews(res.Children)})
}

type askRequest struct {
	Epoch            *int64          `json:"epoch"`
	Question         *string         `json:"question"`
	SuggestedAnswers []string        `json:"suggested_answers"`
	Context          json.RawMessage `json:"context"`
	Blocking         *bool           `json:"blocking"`
	DueInSeconds     *int64          `json:"due_in_seconds"`
	OnOverdue        string          `json:"on_overdue"`
	DefaultAnswer    string          `json:"default_answer"`
}

// ask opens an attention request under the lease: 201 {attention, lease}. A
// blocking request (the default) ends the lease as attention_requested.
func (a *API) ask(c echo.Context) error {
	var req askRequest
	project, f, err := a.fenced(c, &req, func() *int64 { return req.Epoch })
	if err != nil {
		return err
	}
	if req.Question == nil {
		return wgerr.InvalidField("question", "is required")
	}
	blocking := req.Blocking == nil || *req.Blocking
	var due time.Duration
	if req.DueInSeconds != nil {
		if *req.DueInSeconds < 1 || *req.DueInSeconds > int64(attention.MaxDue/time.Second) {
			return wgerr.InvalidField("due_in_seconds", "must be 1 to %d", int64(attention.MaxDue/time.Second))
		}
		due = time.Duration(*req.DueInSeconds) * time.Second
	}
	res, err := a.svc.Leases.Ask(c.Request().Context(), project, f, attention.NewRequest{
		Question: *req.Question, SuggestedAnswers: req.SuggestedAnswers, Context: req.Context, Blocking: blocking,
		RequestedBy: principal(c).String(), DueIn: due, OnOverdue: req.OnOverdue, DefaultAnswer: req.DefaultAnswer,
	})
	if err != nil {
		return renameFields(err, map[string]string{"due_in": "due_in_seconds"})
	}
	return c.JSON(http.StatusCreated, wire.AskResult{Attention: attentionView(res.Request), Lease: leaseView(res.Lease)})
}

type stopRequest struct {
	Reason string `json:"reason"`
}

// requestStop records a person's request that the worker stop; the worker
// learns it from its next heartbeat (stop_requested: true).
func (a *API) requestStop(c echo.Context) error {
	var req stopRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	project, id, err := a.leaseProject(c)
	if err != nil {
		return err
	}
	l, err := a.svc.Leases.RequestStop(c.Request().Context(), project, id, principal(c).String(), req.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, leaseView(l))
}

func (a *API) getLease(c echo.Context) error {
	if err := onlyQuery(c, "cursor", "limit"); err != nil {
		return err
	}
	project, id, err := a.leaseProject(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := a.svc.Leases.Get(ctx, project, id)
	if err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	obs, err := a.svc.Leases.Observations(ctx, project, id, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.LeaseDetail{Lease: leaseView(l), Observations: observationViews(obs.Observations),
		ObservationsNextCursor: cursor(obs.Next)})
}

var outcomes = []lease.Outcome{lease.OutcomeCompleted, lease.OutcomeReleased, lease.OutcomeFailed, lease.OutcomeCancelled,
	lease.OutcomeDecomposed, lease.OutcomeAttentionRequested, lease.OutcomeExpired}

// historyFilter reads the history query: worker=, outcome=, since=,
// until= (RFC 3339), sort= (acquired, -acquired, ran, -ran; default
// acquired), cursor=, limit=.
func historyFilter(c echo.Context) (lease.HistoryFilter, error) {
	limit, err := pageSize(c)
	if err != nil {
		return lease.HistoryFilter{}, err
	}
	f := lease.HistoryFilter{Worker: c.QueryParam("worker"), Cursor: c.QueryParam("cursor"), Limit: limit,
		Order: lease.HistoryOrder(c.QueryParam("sort"))}
	if s := c.QueryParam("outcome"); s != "" {
		o := lease.Outcome(s)
		ok := false
		for _, v := range outcomes {
			ok = ok || v == o
		}
		if !ok {
			return f, wgerr.InvalidField("outcome", "unknown outcome %q (completed, released, failed, cancelled, decomposed, attention_requested, expired)", s)
		}
		f.Outcome = &o
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := c.QueryParam(b.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil && strings.Contains(s, " ") {
				// An unescaped "+01:00" offset arrives as " 01:00".
				t, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(s, " ", "+"))
			}
			if err != nil {
				return f, wgerr.InvalidField(b.name, "must be an RFC 3339 time, got %q", s)
			}
			*b.dst = &t
		}
	}
	if f.Since != nil && f.Until != nil && f.Until.Before(*f.Since) {
		// Nothing could match, by the parameters' mistake rather than the
		// history's (the web's search refuses it the same way).
		return f, wgerr.InvalidField("until", "is before since (%s): since and until are the other way round", f.Since.Format(time.RFC3339Nano))
	}
	return f, nil
}

// leaseHistory: the project's leases, oldest first unless sort= says.
func (a *API) leaseHistory(c echo.Context) error {
	if err := onlyQuery(c, "item_id", "worker", "outcome", "since", "until", "sort", "cursor", "limit", "page_size"); err != nil {
		return err
	}
	f, err := historyFilter(c)
	if err != nil {
		return err
	}
	if f.ItemID, err = queryID(c, "item_id"); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	return a.writeHistory(c, p.ID, f)
}

// itemLeases: the item's leases, oldest first unless sort= says.
func (a *API) itemLeases(c echo.Context) error {
	if err := onlyQuery(c, "worker", "outcome", "since", "until", "sort", "cursor", "limit", "page_size"); err != nil {
		return err
	}
	f, err := historyFilter(c)
	if err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	if _, err := a.svc.Graph.Item(c.Request().Context(), p.ID, id); err != nil {
		return err
	}
	f.ItemID = &id
	return a.writeHistory(c, p.ID, f)
}

func (a *API) writeHistory(c echo.Context, project uuid.UUID, f lease.HistoryFilter) error {
	page, err := a.svc.Leases.History(c.Request().Context(), project, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.LeasePage{Leases: leaseViews(page.Leases), NextCursor: cursor(page.NextCursor)})
}

// workers: a page of the project's workers by name (?limit=, ?cursor=),
// each with its outcome counts and usage, and the live leases of the
// page's workers with their liveness (at most lease.WorkerPageLeases).
func (a *API) workers(c echo.Context) error {
	if err := onlyQuery(c, "cursor", "limit"); err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	wp, err := a.svc.Leases.WorkersPage(c.Request().Context(), p.ID, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	out := wire.Workers{Active: leaseViews(wp.Active), Workers: make([]wire.WorkerStat, len(wp.Stats)),
		Activity: activityViews(wp.Activity), NextCursor: cursor(wp.Next)}
	for i, s := range wp.Stats {
		out.Workers[i] = workerStatView(s)
		out.Workers[i].Usage = usageView(wp.Usage[s.Worker])
	}
	return c.JSON(http.StatusOK, out)
}

// stopReason is a heartbeat answer's stop_reason: null unless the worker
// is told to stop.
func stopReason(res lease.HeartbeatResult) *string {
	if res.StopReason == "" {
		return nil
	}
	return &res.StopReason
}
