package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/semaphore"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Defaults of the plan gate (Config.PlanBytesInFlight, Config.PlanWait).
const (
	DefaultPlanBytesInFlight = 4 * maxPlanBodyBytes
	DefaultPlanWait          = 2 * time.Second
)

// planGate bounds the plan imports this replica reads and decodes at once,
// by the size of their bodies. A plan import may send 16 MiB, and reading,
// checking and decoding it holds several times that in memory (about
// 120 MB for a 15 MiB plan of 50,000 items) until the import ends; without
// a bound, a token's burst of imports (its rate limit allows 300) takes
// the replica's memory with it. An import declares its size
// (Content-Length; a body without one counts as the route's limit) and
// waits up to wait for that much room, then is refused with 429
// rate_limited and Retry-After, before its body is read. Small plans take
// little room, so they pass beside a few large ones that are running; the
// waiters are served in arrival order (semaphore.Weighted), so a small
// plan that comes after a large one still waiting waits behind it: a
// stream of small imports never starves a large one.
type planGate struct {
	capacity int64
	wait     time.Duration
	sem      *semaphore.Weighted
}

func newPlanGate(capacity int64, wait time.Duration) *planGate {
	if capacity <= 0 {
		capacity = DefaultPlanBytesInFlight
	}
	if wait <= 0 {
		wait = DefaultPlanWait
	}
	return &planGate{capacity: capacity, wait: wait, sem: semaphore.NewWeighted(capacity)}
}

// enter takes room for a body of size bytes (at least 1, at most the
// gate's capacity), waiting up to g.wait, and returns the function that
// gives it back.
//
// Errors: rate_limited when no room freed up in time; unavailable when ctx
// ended first.
func (g *planGate) enter(ctx context.Context, size int64) (release func(), err error) {
	size = min(max(size, 1), g.capacity)
	wctx, cancel := context.WithTimeout(ctx, g.wait)
	defer cancel()
	if err := g.sem.Acquire(wctx, size); err != nil {
		if ctx.Err() != nil {
			return nil, wgerr.New(wgerr.CodeUnavailable, "the request ended while waiting to import its plan")
		}
		return nil, wgerr.New(wgerr.CodeRateLimited,
			"too many plan imports are running on this replica (at most %s of plans at once); retry after 1 s", mib(g.capacity))
	}
	return func() { g.sem.Release(size) }, nil
}

// gatePlans is the plan route's admission through a.plans, before anything
// reads its body (the Idempotency-Key check included).
func (a *API) gatePlans(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		size := c.Request().ContentLength
		if size < 0 {
			size = routeBodyLimit(c).bytes
		}
		release, err := a.plans.enter(c.Request().Context(), size)
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}
