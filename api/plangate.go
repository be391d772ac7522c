package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/bodygate"
)

// Defaults of the plan gate (Config.PlanBytesInFlight, Config.PlanWait).
const (
	DefaultPlanBytesInFlight = 4 * maxPlanBodyBytes
	DefaultPlanWait          = 2 * time.Second
)

// newPlanGate bounds the plan imports this replica reads and decodes at
// once, by the size of their bodies: a bodygate.Gate of its own, apart
// from the budget of the other bodies (a plan import may send 16 MiB, 16
// times any other route's limit). Reading, checking and decoding a plan
// holds several times its size in memory (about 120 MB for a 15 MiB plan
// of 50,000 items) until the import ends; without a bound, a token's burst
// of imports (its rate limit allows 300) takes the replica's memory with
// it. An import takes room for its declared size (Content-Length; a body
// without one counts as the route's limit) before its body is read, waits
// up to wait for it, then is refused with 429 rate_limited and
// Retry-After. Room goes to whichever waiter fits and the last eighth is
// kept for plans of at most bodygate.SmallBody, so a small plan passes
// beside large ones, running or waiting.
func newPlanGate(capacity int64, wait time.Duration) *bodygate.Gate {
	if capacity <= 0 {
		capacity = DefaultPlanBytesInFlight
	}
	if wait <= 0 {
		wait = DefaultPlanWait
	}
	return bodygate.NewFor("plan imports", capacity, wait)
}

// gatePlans is the plan route's admission through a.plans, before anything
// reads its body (the Idempotency-Key check included).
func (a *API) gatePlans(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		size := c.Request().ContentLength
		if size < 0 {
			size = routeBodyLimit(c).bytes
		}
		release, err := a.plans.Enter(c.Request().Context(), max(size, 1))
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}
