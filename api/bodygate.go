package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/bodygate"
)

// bodyHoldKey holds, in the request's context, the room gateBodies took
// for the request's body (a *bodygate.Hold).
const bodyHoldKey = "workgraph.bodyHold"

// shrinkBodyHold gives back the room a body without a length took beyond
// its size, once it is read whole (n bytes).
func shrinkBodyHold(c echo.Context, n int) {
	if h, ok := c.Get(bodyHoldKey).(*bodygate.Hold); ok && c.Request().ContentLength < 0 {
		h.Shrink(int64(n))
	}
}

// gateBodies takes room in the replica's budget of request bodies
// (a.bodies) for the body a request declares, before anything reads it
// (the Idempotency-Key check included), and gives it back when the
// request ends, however it ends (a client gone mid-body included). A body
// without a Content-Length counts as its route's limit; a request without
// a body takes no room. Beyond the budget, after a short wait: 429
// rate_limited with Retry-After, the body unread. A body without a length,
// once read whole, keeps only its size (readBody).
func (a *API) gateBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		size := req.ContentLength
		switch {
		case req.Body == nil || req.Body == http.NoBody:
			size = 0
		case size < 0:
			size = routeBodyLimit(c).bytes
		}
		hold, err := a.bodies.Take(req.Context(), size)
		if err != nil {
			return err
		}
		defer hold.Release()
		c.Set(bodyHoldKey, hold)
		return next(c)
	}
}
