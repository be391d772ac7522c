package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

// The batch routes of the lease protocol. A batch answers 200 with one
// answer per entry, in the order of the entries: each entry is fenced and
// answered on its own, with the status and problem the single call would
// have given, so one stale entry refuses only itself. Bad input (no
// entries, more than lease.MaxBatch, a malformed entry, a lease named
// twice) refuses the whole batch and changes nothing.
//
// Idempotency-Key on a batch completion or heartbeat works as on any POST:
// the whole answer is stored and a retry with the same key and body gets
// it back. Without a key a retry is safe as well: each completed entry of a
// repeated batch answers replayed (or conflicting_result), and a repeated
// heartbeat only renews again. The Go client sends none.
func (a *API) mountBatches(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/completions", a.completeBatch, workers)
	a.handle(e, http.MethodPost, "/projects/:project/heartbeats", a.heartbeatBatch, workers)
}

// claimBatch answers a claim that named max_items: 201 {claims} with 1 to
// max_items leases granted in one statement, or 204 when nothing became
// ready within wait (a long poll answers as soon as one item is granted).
func (a *API) claimBatch(c echo.Context, project uuid.UUID, req claimRequest, wait, ttl time.Duration) error {
	ctx := c.Request().Context()
	who := principal(c)
	cs, err := a.svc.Leases.ClaimBatchWait(ctx, project, lease.ClaimRequest{
		Worker: *req.Worker, TTL: ttl, Labels: req.Labels, Capabilities: req.Capabilities, Principal: who.String(), TokenID: &who.TokenID,
	}, int(*req.MaxItems), wait, a.svc.Notifier)
	if errors.Is(err, lease.ErrNothingReady) {
		return c.NoContent(http.StatusNoContent)
	}
	if err != nil {
		return renameFields(err, map[string]string{"ttl": "lease_seconds"})
	}
	out := wire.ClaimBatch{Claims: make([]wire.Claim, len(cs))}
	token := who.TokenID
	for i, cl := range cs {
		a.holders.put(cl.Lease.ID, holder{project: project, token: &token})
		ft, err := a.fenceToken(cl.Lease)
		if err != nil {
			return err
		}
		out.Claims[i] = claimView(cl, ft)
	}
	return c.JSON(http.StatusCreated, out)
}

// batchToken is the token whose leases a batch may touch: an agent's own
// (nil for an admin, who may act on any lease of the project).
func batchToken(c echo.Context) *uuid.UUID {
	p := principal(c)
	if p.Role != auth.RoleAgent {
		return nil
	}
	t := p.TokenID
	return &t
}

// entryFence reads an entry's lease id and epoch; list[i] names it in
// errors.
func entryFence(list string, i int, id *string, epoch *int64) (lease.Fence, error) {
	field := fmt.Sprintf("%s[%d]", list, i)
	if id == nil {
		return lease.Fence{}, wgerr.InvalidField(field+".lease_id", "is required")
	}
	lid, err := uuid.Parse(*id)
	if err != nil {
		return lease.Fence{}, wgerr.InvalidField(field+".lease_id", "must be a lease id, got %q", *id)
	}
	e, err := requireEpoch(epoch)
	if err != nil {
		return lease.Fence{}, renameFields(err, map[string]string{"epoch": field + ".epoch"})
	}
	return lease.Fence{LeaseID: lid, Epoch: e}, nil
}

func checkEntries(list string, n int) error {
	if n < 1 || n > lease.MaxBatch {
		return wgerr.InvalidField("body", "must be a JSON array of 1 to %d %s, got %d", lease.MaxBatch, list, n)
	}
	return nil
}

// entryProblem is the problem document answering one entry, and its
// status.
func entryProblem(err error) (int, json.RawMessage, error) {
	p, _ := problemFor(err)
	b, merr := json.Marshal(p)
	return p.Status, b, merr
}

type completionEntryRequest struct {
	LeaseID    *string         `json:"lease_id"`
	Epoch      *int64          `json:"epoch"`
	Result     json.RawMessage `json:"result"`
	WorkerTime *string         `json:"worker_time"`
	Usage      *wire.Usage     `json:"usage"`
}

// completeBatch: 200 {completions: [{lease_id, status, completion,
// problem}]}, for a body [{lease_id, epoch, result, worker_time, usage}].
func (a *API) completeBatch(c echo.Context) error {
	var req []completionEntryRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := checkEntries("completions", len(req)); err != nil {
		return err
	}
	entries := make([]lease.CompletionEntry, len(req))
	for i, r := range req {
		f, err := entryFence("completions", i, r.LeaseID, r.Epoch)
		if err != nil {
			return err
		}
		wt, err := workerTime(r.WorkerTime)
		if err != nil {
			return renameFields(err, map[string]string{"worker_time": fmt.Sprintf("completions[%d].worker_time", i)})
		}
		entries[i] = lease.CompletionEntry{Fence: f, Result: r.Result, WorkerTime: wt, Usage: usageOf(r.Usage)}
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	answers, err := a.svc.Leases.CompleteBatch(c.Request().Context(), p.ID, batchToken(c), entries)
	if err != nil {
		return err
	}
	out := wire.Completions{Completions: make([]wire.CompletionAnswer, len(answers))}
	for i, an := range answers {
		o := wire.CompletionAnswer{LeaseID: entries[i].LeaseID.String(), Status: http.StatusOK, Problem: json.RawMessage("null")}
		if an.Err != nil {
			if o.Status, o.Problem, err = entryProblem(an.Err); err != nil {
				return err
			}
		} else {
			res := an.Completion
			o.Completion = &wire.Completion{Lease: leaseView(res.Lease), Item: itemView(res.Item), Replayed: res.Replayed}
		}
		out.Completions[i] = o
	}
	return c.JSON(http.StatusOK, out)
}

type heartbeatEntryRequest struct {
	LeaseID      *string         `json:"lease_id"`
	Epoch        *int64          `json:"epoch"`
	Progress     json.RawMessage `json:"progress"`
	LeaseSeconds *int64          `json:"lease_seconds"`
	WorkerTime   *string         `json:"worker_time"`
	Usage        *wire.Usage     `json:"usage"`
}

// heartbeatBatch: 200 {heartbeats: [{lease_id, status, heartbeat,
// problem}]}, for a body [{lease_id, epoch, progress, lease_seconds,
// worker_time, usage}]; each heartbeat carries stop_requested (and its
// stop_reason, budget_exhausted included) and answers as the single
// heartbeat does.
func (a *API) heartbeatBatch(c echo.Context) error {
	var req []heartbeatEntryRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := checkEntries("heartbeats", len(req)); err != nil {
		return err
	}
	entries := make([]lease.HeartbeatEntry, len(req))
	for i, r := range req {
		field := fmt.Sprintf("heartbeats[%d]", i)
		f, err := entryFence("heartbeats", i, r.LeaseID, r.Epoch)
		if err != nil {
			return err
		}
		wt, err := workerTime(r.WorkerTime)
		if err != nil {
			return renameFields(err, map[string]string{"worker_time": field + ".worker_time"})
		}
		ttl, err := leaseSeconds(r.LeaseSeconds)
		if err != nil {
			return renameFields(err, map[string]string{"lease_seconds": field + ".lease_seconds"})
		}
		entries[i] = lease.HeartbeatEntry{Fence: f, Heartbeat: lease.Heartbeat{Progress: r.Progress, WorkerTime: wt, TTL: ttl, Usage: usageOf(r.Usage)}}
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	answers, err := a.svc.Leases.HeartbeatBatch(c.Request().Context(), p.ID, batchToken(c), entries)
	if err != nil {
		return ttlAsLeaseSeconds(err)
	}
	out := wire.Heartbeats{Heartbeats: make([]wire.HeartbeatAnswer, len(answers))}
	for i, an := range answers {
		o := wire.HeartbeatAnswer{LeaseID: entries[i].LeaseID.String(), Status: http.StatusOK, Problem: json.RawMessage("null")}
		if an.Err != nil {
			if o.Status, o.Problem, err = entryProblem(an.Err); err != nil {
				return err
			}
		} else {
			res := an.Result
			ft, err := a.fenceToken(res.Lease)
			if err != nil {
				return err
			}
			o.Heartbeat = &wire.Heartbeat{
				Lease: leaseView(res.Lease), ExpiresAt: res.Lease.ExpiresAt, StopRequested: res.StopRequested,
				StopReason: stopReason(res), Answers: attentionViews(res.Answers), OlderAnswers: res.OlderAnswers, FenceToken: ft,
			}
		}
		out.Heartbeats[i] = o
	}
	return c.JSON(http.StatusOK, out)
}

// ttlAsLeaseSeconds gives an entry's "heartbeats[i].ttl" (the lease
// service's name) the API's name, "heartbeats[i].lease_seconds".
func ttlAsLeaseSeconds(err error) error {
	var we *wgerr.Error
	if !errors.As(err, &we) || !strings.HasSuffix(we.Field, ".ttl") {
		return err
	}
	to := strings.TrimSuffix(we.Field, ".ttl") + ".lease_seconds"
	return renameFields(err, map[string]string{we.Field: to})
}

// isBatchClaim reports whether the claim being answered named max_items
// (its body is the one its Idempotency-Key was first used with).
func isBatchClaim(c echo.Context) (bool, error) {
	body, err := readBody(c)
	if err != nil {
		return false, err
	}
	var r struct {
		MaxItems *int64 `json:"max_items"`
	}
	_ = json.Unmarshal(body, &r) // the body was decoded once already
	return r.MaxItems != nil, nil
}
