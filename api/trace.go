package api

import (
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/telemetry"
)

// tag names what the request is about (its project, item, lease and
// epoch, as far as the handler knows them) on the request's span and the
// spans of the database transactions it runs from now on. It costs
// nothing when the request is not traced.
func tag(c echo.Context, t telemetry.Tags) {
	telemetry.Tag(c.Request().Context(), t)
}
