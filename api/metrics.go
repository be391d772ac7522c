package api

import (
	"errors"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// answeredKey holds how long an answered attention request waited
// (resolveAttention sets it for observe).
const answeredKey = "workgraph.answered_after"

// leaseOps maps the routes of fenced lease calls to their operation and
// the outcome a success gives the lease ("" for heartbeat: the lease
// lives on).
var leaseOps = map[string]struct{ op, outcome string }{
	"/v1/leases/:id/heartbeat": {"heartbeat", ""},
	"/v1/leases/:id/complete":  {"complete", string(lease.OutcomeCompleted)},
	"/v1/leases/:id/release":   {"release", string(lease.OutcomeReleased)},
	"/v1/leases/:id/fail":      {"fail", string(lease.OutcomeFailed)},
	"/v1/leases/:id/decompose": {"decompose", string(lease.OutcomeDecomposed)},
	"/v1/leases/:id/attention": {"ask", string(lease.OutcomeAttentionRequested)},
}

// observe counts what a /v1 request did (claims, lease outcomes, refused
// calls, answers) from its route, its status and the error it returned. A
// replayed answer (Idempotency-Key) did nothing new and counts nothing.
func (a *API) observe(c echo.Context, err error, took time.Duration) {
	m := a.metrics
	if m == nil || c.Response().Header().Get(ReplayedHeader) == "true" {
		return
	}
	route, status := c.Path(), c.Response().Status
	switch {
	case route == "/v1/projects/:project/claims" && status == 201:
		m.Claim(metrics.ClaimGranted, took)
	case route == "/v1/projects/:project/claims" && status == 204:
		m.Claim(metrics.ClaimEmpty, took)
	case route == "/v1/attention/:id/resolve" && status == 200:
		if d, ok := c.Get(answeredKey).(time.Duration); ok {
			m.Answered(d)
		}
	}
	op, ok := leaseOps[route]
	if !ok {
		return
	}
	if status >= 200 && status < 300 && op.outcome != "" {
		m.LeaseEnded(op.outcome)
	}
	var we *wgerr.Error
	if errors.As(err, &we) && we.Code == wgerr.CodeLeaseLost {
		m.Refused(op.op, refusal(we))
	}
}

// refusal tells a late call (the lease expired first) from a stale one.
func refusal(e *wgerr.Error) string {
	if e.Details["outcome"] == string(lease.OutcomeExpired) || strings.HasSuffix(e.Message, " has expired") {
		return metrics.RefusedLate
	}
	return metrics.RefusedStale
}
