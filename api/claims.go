package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

// MaxWaitSeconds bounds a claim's long poll.
const MaxWaitSeconds = 60

// leaseSeconds converts the lease_seconds of a claim or a heartbeat (nil:
// the server's default, 0) to a TTL. Numbers outside 1..lease.TTLCeiling
// are refused here, before the conversion could overflow; the lease
// service checks the configured bounds.
func leaseSeconds(secs *int64) (time.Duration, error) {
	if secs == nil {
		return 0, nil
	}
	if *secs < 1 || *secs > int64(lease.TTLCeiling/time.Second) {
		return 0, wgerr.InvalidField("lease_seconds", "must be a positive number of seconds within the server's bounds, got %d", *secs)
	}
	return time.Duration(*secs) * time.Second, nil
}

func (a *API) mountClaims(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/claims", a.claim, workersWait)
}

type claimRequest struct {
	Worker       *string  `json:"worker"`
	LeaseSeconds *int64   `json:"lease_seconds"`
	WaitSeconds  *int64   `json:"wait_seconds"`
	Labels       []string `json:"labels"`
	// MaxItems asks for a batch (claimBatch): up to this many leases, and
	// the batch answer. Absent, the claim grants one lease and answers it
	// alone.
	MaxItems     *int64   `json:"max_items"`
	Capabilities []string `json:"capabilities"`
}

// claim grants the next ready item: 201 {lease, item, attention}, or 204
// when nothing became ready within wait_seconds (0..60; a long poll woken
// by LISTEN/NOTIFY), or at once 409 no_match when ready items exist but
// the capabilities cover none of their requires.
func (a *API) claim(c echo.Context) error {
	var req claimRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Worker == nil {
		return wgerr.InvalidField("worker", "is required (a stable label of the worker)")
	}
	var wait time.Duration
	if req.WaitSeconds != nil {
		if *req.WaitSeconds < 0 || *req.WaitSeconds > MaxWaitSeconds {
			return wgerr.InvalidField("wait_seconds", "must be between 0 and %d, got %d", MaxWaitSeconds, *req.WaitSeconds)
		}
		wait = time.Duration(*req.WaitSeconds) * time.Second
	}
	ttl, err := leaseSeconds(req.LeaseSeconds)
	if err != nil {
		return err
	}
	if req.MaxItems != nil && (*req.MaxItems < 1 || *req.MaxItems > lease.MaxBatch) {
		return wgerr.InvalidField("max_items", "must be between 1 and %d, got %d", lease.MaxBatch, *req.MaxItems)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), wait+a.timeout)
	defer cancel()
	if wait > 0 {
		// The token is checked again by each attempt after the first,
		// in the attempt's statement: a token revoked while the claim
		// waits is refused, not granted a lease.
		if bearer, err := bearerOf(c); err == nil {
			ctx = a.auth.Rechecking(ctx, principal(c), bearer)
		}
	}
	c.SetRequest(c.Request().WithContext(ctx))
	p, err := a.project(c)
	if err != nil {
		return err
	}
	if req.MaxItems != nil {
		return a.claimBatch(c, p.ID, req, wait, ttl)
	}
	who := principal(c)
	cl, err := a.svc.Leases.ClaimWait(ctx, p.ID, lease.ClaimRequest{
		Worker: *req.Worker, TTL: ttl, Labels: req.Labels, Capabilities: req.Capabilities, Principal: who.String(), TokenID: &who.TokenID,
	}, wait, a.svc.Notifier)
	if errors.Is(err, lease.ErrNothingReady) {
		return c.NoContent(http.StatusNoContent)
	}
	if err != nil {
		return renameFields(err, map[string]string{"ttl": "lease_seconds"})
	}
	tag(c, telemetry.Tags{Item: cl.Item.ID, Lease: cl.Lease.ID, Epoch: cl.Lease.Epoch})
	// The worker's next call names this lease; its holder is known now.
	token := who.TokenID
	a.holders.put(cl.Lease.ID, holder{project: p.ID, token: &token})
	ft, err := a.fenceToken(cl.Lease)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, claimView(cl, ft))
}

// claimView is a granted claim's answer, with its lease's fence token ft.
func claimView(cl lease.Claim, ft string) wire.Claim {
	return wire.Claim{Lease: leaseView(cl.Lease), Item: itemView(cl.Item), Attention: attentionViews(cl.Attention),
		OlderAttention: cl.OlderAttention, FenceToken: ft}
}

// renameFields gives a domain error the API's name of its field.
func renameFields(err error, names map[string]string) error {
	var we *wgerr.Error
	if !errors.As(err, &we) || names[we.Field] == "" {
		return err
	}
	to := names[we.Field]
	out := *we
	out.Field = to
	if rest, ok := cutPrefix(we.Message, we.Field+":"); ok {
		out.Message = to + ":" + rest
	}
	return &out
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// recoverClaim answers the retry of a claim whose lease was granted but
// whose answer was lost (its server died first): 201 with that lease, its
// item and the item's attention history, as the claim would have
// answered, marked Idempotent-Replayed. A lease that has ended since is
// 409 outcome_unknown: the item went back (or on) without this worker.
func (a *API) recoverClaim(c echo.Context, ref, key string) error {
	id, err := uuid.Parse(ref)
	if err != nil {
		return fmt.Errorf("idempotency record of a claim names lease %q: %w", ref, err)
	}
	if batch, err := isBatchClaim(c); err != nil || batch {
		if err != nil {
			return err
		}
		return &wgerr.Error{Code: wgerr.CodeOutcomeUnknown,
			Message: fmt.Sprintf("the batch claim with Idempotency-Key %q granted leases (lease %s among them) but its answer was lost; they return to circulation when they expire: claim again with a new key", key, id),
			Details: map[string]any{"lease_id": id.String()}}
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := a.svc.Leases.Get(ctx, p.ID, id)
	if err != nil {
		return err
	}
	if l.EndedAt != nil {
		how := "ended"
		if l.Outcome != nil {
			how = string(*l.Outcome)
		}
		return &wgerr.Error{Code: wgerr.CodeOutcomeUnknown,
			Message: fmt.Sprintf("the claim with Idempotency-Key %q granted lease %s but its answer was lost, and that lease has ended since (%s); claim again with a new key", key, l.ID, how),
			Details: map[string]any{"lease_id": l.ID.String()}}
	}
	item, err := a.svc.Graph.Item(ctx, p.ID, l.ItemID)
	if err != nil {
		return err
	}
	hist, err := a.svc.Attention.Latest(ctx, p.ID, l.ItemID, "", lease.ClaimHistory)
	if err != nil {
		return err
	}
	c.Response().Header().Set(ReplayedHeader, "true")
	ft, err := a.fenceToken(l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, claimView(lease.Claim{Lease: l, Item: item, Attention: hist.Requests, OlderAttention: hist.Older != ""}, ft))
}
