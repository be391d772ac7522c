package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// gateBodies takes room in the replica's budget of request bodies
// (a.bodies) for the body a request declares, before anything reads it
// (the Idempotency-Key check included), and gives it back when the
// request ends, however it ends (a client gone mid-body included). A body
// without a Content-Length counts as its route's limit; a request without
// a body takes no room. Beyond the budget, after a short wait: 429
// rate_limited with Retry-After, the body unread.
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
		release, err := a.bodies.Enter(req.Context(), size)
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}
