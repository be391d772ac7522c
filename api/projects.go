package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func projectView(p graph.Project) wire.Project {
	out := wire.Project{ID: p.ID.String(), Name: p.Name, CreatedAt: p.CreatedAt, OnExpiry: p.OnExpiry}
	if p.AttentionDueIn > 0 {
		s := int64(p.AttentionDueIn / time.Second)
		out.AttentionDueInSeconds = &s
	}
	out.QuietAfterSeconds = int64(p.QuietAfter / time.Second)
	if p.NoProgressAfter > 0 {
		s := int64(p.NoProgressAfter / time.Second)
		out.NoProgressAfterSeconds = &s
	}
	return out
}

func (a *API) mountProjects(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects", a.createProject, adminOnly)
	a.handle(e, http.MethodGet, "/projects", a.listProjects, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project", a.getProject, anyRole)
	a.handle(e, http.MethodPatch, "/projects/:project", a.updateProject, adminOnly)
}

// project resolves the {project} path parameter (a name or an id) to a
// project the caller may see; any other project is not found, with field
// "project" so that a client can tell it from a missing item and name the
// projects it may use instead.
func (a *API) project(c echo.Context) (graph.Project, error) {
	ref := c.Param("project")
	p, err := a.cachedProject(c.Request().Context(), ref)
	if errors.Is(err, wgerr.NotFound) || (err == nil && !principal(c).CanSee(p.ID)) {
		nf := wgerr.New(wgerr.CodeNotFound, "project %q not found", ref)
		nf.Field = "project"
		return graph.Project{}, nf
	}
	if err == nil {
		tag(c, telemetry.Tags{Project: p.ID})
	}
	return p, err
}

// seeProject refuses (as not found) a resource of a project the caller may
// not see; what names the resource in the error.
func seeProject(c echo.Context, projectID uuid.UUID, what string, id uuid.UUID) error {
	if !principal(c).CanSee(projectID) {
		return wgerr.New(wgerr.CodeNotFound, "%s %s not found", what, id)
	}
	return nil
}

// routeID parses the {id} path parameter of a route on one resource; a
// malformed id is that resource (what names it) not found.
func routeID(c echo.Context, what string) (uuid.UUID, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return uuid.Nil, wgerr.New(wgerr.CodeNotFound, "%s %q not found", what, c.Param("id"))
	}
	return id, nil
}

// resourceProject resolves the {id} of a route that names a resource but
// not its project (/leases/:id, /attention/:id) to the resource's project
// through projectOf, refusing (as not found) one the caller may not see;
// what names the resource in the errors.
func (a *API) resourceProject(c echo.Context, what string, projectOf func(context.Context, uuid.UUID) (uuid.UUID, error)) (project, id uuid.UUID, err error) {
	id, err = routeID(c, what)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	project, err = projectOf(c.Request().Context(), id)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	if err := seeProject(c, project, what, id); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	t := telemetry.Tags{Project: project}
	if what == "lease" {
		t.Lease = id
	}
	tag(c, t)
	return project, id, nil
}

type createProjectRequest struct {
	Name *string `json:"name"`
}

func (a *API) createProject(c echo.Context) error {
	var req createProjectRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return wgerr.InvalidField("name", "is required")
	}
	p, err := a.svc.Graph.CreateProject(c.Request().Context(), *req.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, projectView(p))
}

// listProjects lists every project for an admin, and the caller's own
// project for everyone else.
func (a *API) listProjects(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p := principal(c)
	out := wire.ProjectList{Projects: []wire.Project{}}
	if !p.IsAdmin() {
		if p.ProjectID != nil {
			proj, err := a.svc.Graph.Project(c.Request().Context(), p.ProjectID.String())
			if err != nil {
				return err
			}
			out.Projects = append(out.Projects, projectView(proj))
		}
		return c.JSON(http.StatusOK, out)
	}
	ps, err := a.svc.Graph.ListProjects(c.Request().Context())
	if err != nil {
		return err
	}
	for _, proj := range ps {
		out.Projects = append(out.Projects, projectView(proj))
	}
	return c.JSON(http.StatusOK, out)
}

// getProject reads the project itself: the cache (a.project) keeps only
// what never changes, and on_expiry may.
func (a *API) getProject(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	if p, err = a.svc.Graph.Project(c.Request().Context(), p.ID.String()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, projectView(p))
}

type updateProjectRequest struct {
	OnExpiry               *string `json:"on_expiry"`
	AttentionDueInSeconds  *int64  `json:"attention_due_in_seconds"`
	QuietAfterSeconds      *int64  `json:"quiet_after_seconds"`
	NoProgressAfterSeconds *int64  `json:"no_progress_after_seconds"`
}

// updateProject sets the project's settings: on_expiry (the default for
// its items) and attention_due_in_seconds (the deadline of a worker's
// question that names none; 0 removes it), at least one, in one
// transaction.
func (a *API) updateProject(c echo.Context) error {
	var req updateProjectRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.OnExpiry == nil && req.AttentionDueInSeconds == nil && req.QuietAfterSeconds == nil && req.NoProgressAfterSeconds == nil {
		return wgerr.InvalidField("on_expiry",
			"one of on_expiry, attention_due_in_seconds, quiet_after_seconds, no_progress_after_seconds is required")
	}
	patch := graph.ProjectPatch{OnExpiry: req.OnExpiry}
	if req.AttentionDueInSeconds != nil {
		secs := *req.AttentionDueInSeconds
		if secs < 0 || secs > int64(graph.MaxAttentionDue/time.Second) {
			return wgerr.InvalidField("attention_due_in_seconds", "must be 0 (none) to %d", int64(graph.MaxAttentionDue/time.Second))
		}
		d := time.Duration(secs) * time.Second
		patch.AttentionDueIn = &d
	}
	limit := int64(graph.MaxAttentionDue / time.Second)
	if v := req.QuietAfterSeconds; v != nil {
		if *v < 1 || *v > limit {
			return wgerr.InvalidField("quiet_after_seconds", "must be 1 to %d", limit)
		}
		d := time.Duration(*v) * time.Second
		patch.QuietAfter = &d
	}
	if v := req.NoProgressAfterSeconds; v != nil {
		if *v < 0 || *v > limit {
			return wgerr.InvalidField("no_progress_after_seconds", "must be 0 (none) to %d", limit)
		}
		d := time.Duration(*v) * time.Second
		patch.NoProgressAfter = &d
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	if p, err = a.svc.Graph.UpdateProject(c.Request().Context(), p.ID, patch); err != nil {
		return renameFields(err, map[string]string{"attention_due_in": "attention_due_in_seconds",
			"quiet_after": "quiet_after_seconds", "no_progress_after": "no_progress_after_seconds"})
	}
	return c.JSON(http.StatusOK, projectView(p))
}
