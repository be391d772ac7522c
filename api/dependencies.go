package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountDependencies(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/items/:id/dependencies", a.addDependency, anyRole)
	a.handle(e, http.MethodDelete, "/projects/:project/items/:id/dependencies/:depends_on", a.removeDependency, people)
}

type addDependencyRequest struct {
	DependsOn *string `json:"depends_on"`
}

// addDependency records "{id} depends on depends_on"; an edge that would
// close a cycle is refused with 409 dependency_cycle naming the cycle.
func (a *API) addDependency(c echo.Context) error {
	var req addDependencyRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.DependsOn == nil {
		return wgerr.InvalidField("depends_on", "is required")
	}
	dep, err := parseID("depends_on", *req.DependsOn)
	if err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := a.svc.Graph.AddDependency(ctx, p.ID, id, dep, principal(c).String()); err != nil {
		return err
	}
	it, err := a.svc.Graph.Item(ctx, p.ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, wire.Dependency{ItemID: id.String(), DependsOn: dep.String(), Item: itemView(it)})
}

func (a *API) removeDependency(c echo.Context) error {
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	dep, err := pathID(c, "depends_on")
	if err != nil {
		return err
	}
	if err := a.svc.Graph.RemoveDependency(c.Request().Context(), p.ID, id, dep); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
