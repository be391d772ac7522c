package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountItems(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/items", a.createItem, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/items", a.listItems, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/items/:id", a.getItem, anyRole)
	a.handle(e, http.MethodPatch, "/projects/:project/items/:id", a.updateItem, people)
	a.handle(e, http.MethodPost, "/projects/:project/items/:id/cancel", a.cancelItem, people)
	a.handle(e, http.MethodGet, "/projects/:project/items/:id/graph", a.itemGraph, anyRole)
	a.handle(e, http.MethodGet, "/projects/:project/graph", a.projectGraph, anyRole)
}

// parseID parses an id given in a request body or query.
func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, wgerr.InvalidField(field, "must be a UUID, got %q", s)
	}
	return id, nil
}

func parseOptID(field string, s *string) (*uuid.UUID, error) {
	if s == nil {
		return nil, nil
	}
	id, err := parseID(field, *s)
	return &id, err
}

// projectItem resolves {project} and {id}.
func (a *API) projectItem(c echo.Context) (graph.Project, uuid.UUID, error) {
	p, err := a.project(c)
	if err != nil {
		return p, uuid.Nil, err
	}
	id, err := routeID(c, "item")
	if err == nil {
		tag(c, telemetry.Tags{Item: id})
	}
	return p, id, err
}

// writeItem answers an item with its version as ETag.
func writeItem(c echo.Context, status int, it graph.Item) error {
	c.Response().Header().Set("ETag", strconv.Quote(strconv.Itoa(int(it.Version))))
	return c.JSON(status, itemView(it))
}

type createItemRequest struct {
	Title     *string         `json:"title"`
	Body      string          `json:"body"`
	Priority  int32           `json:"priority"`
	ParentID  *string         `json:"parent_id"`
	DependsOn []string        `json:"depends_on"`
	Labels    []string        `json:"labels"`
	Requires  []string        `json:"requires"`
	Touches   []string        `json:"touches"`
	Metadata  json.RawMessage `json:"metadata"`
	// OnExpiry: "retry" or "reconcile"; absent or null: the project's.
	OnExpiry optionalString `json:"on_expiry"`
}

func (a *API) createItem(c echo.Context) error {
	var req createItemRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Title == nil {
		return wgerr.InvalidField("title", "is required")
	}
	parent, err := parseOptID("parent_id", req.ParentID)
	if err != nil {
		return err
	}
	deps := make([]uuid.UUID, len(req.DependsOn))
	for i, s := range req.DependsOn {
		if deps[i], err = parseID("depends_on", s); err != nil {
			return err
		}
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	onExpiry := ""
	if v := req.OnExpiry.value; v != nil {
		if *v == "" {
			return wgerr.InvalidField("on_expiry", "must be \"retry\" or \"reconcile\" (omit it for the project's default)")
		}
		onExpiry = *v
	}
	it, err := a.svc.Graph.CreateItem(c.Request().Context(), p.ID, graph.NewItem{
		Title: *req.Title, Body: req.Body, Priority: req.Priority, ParentID: parent, DependsOn: deps,
		Labels: req.Labels, Requires: req.Requires, Touches: req.Touches, Metadata: req.Metadata, CreatedBy: principal(c).String(), OnExpiry: onExpiry,
	})
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusCreated, it)
}

var itemStates = []graph.State{graph.StateReady, graph.StateLeased, graph.StateBlocked, graph.StateAttention, graph.StateDone, graph.StateCancelled}

// listItems: ?state= (one or more, repeated or comma-separated), label=,
// parent_id=, q= (text in the title or body), sort= (created, -created,
// priority, -priority, updated, -updated; default created), cursor=, limit= (1..500).
func (a *API) listItems(c echo.Context) error {
	if err := onlyQuery(c, "state", "label", "parent_id", "q", "sort", "cursor", "limit", "page_size"); err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	f := graph.ListFilter{Label: c.QueryParam("label"), Text: c.QueryParam("q"), Cursor: c.QueryParam("cursor"), Limit: limit,
		Order: graph.ItemOrder(c.QueryParam("sort"))}
	for _, v := range c.QueryParams()["state"] {
		for _, s := range strings.Split(v, ",") {
			st := graph.State(strings.TrimSpace(s))
			if !validState(st) {
				return wgerr.InvalidField("state", "unknown state %q (ready, leased, blocked, attention, done, cancelled)", s)
			}
			f.States = append(f.States, st)
		}
	}
	if f.ParentID, err = queryID(c, "parent_id"); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	if f.Text != "" {
		// A text filter scans the project's items: bounded per project.
		release, err := a.searches.enter(c.Request().Context(), p.ID)
		if err != nil {
			return err
		}
		defer release()
	}
	page, err := a.svc.Graph.ListItems(c.Request().Context(), p.ID, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.ItemPage{Items: itemViews(page.Items), NextCursor: cursor(page.NextCursor)})
}

func validState(s graph.State) bool {
	for _, v := range itemStates {
		if s == v {
			return true
		}
	}
	return false
}

// cursor is a next_cursor: null on the last page.
func cursor(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *API) getItem(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	it, err := a.svc.Graph.Item(c.Request().Context(), p.ID, id)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

type updateItemRequest struct {
	Title    *string          `json:"title"`
	Body     *string          `json:"body"`
	Priority *int32           `json:"priority"`
	Labels   *[]string        `json:"labels"`
	Requires *[]string        `json:"requires"`
	Touches  *[]string        `json:"touches"`
	Metadata *json.RawMessage `json:"metadata"`
	// OnExpiry: "retry" or "reconcile"; explicit null falls back to the
	// project's default; absent leaves it.
	OnExpiry optionalString `json:"on_expiry"`
	// Version, like an If-Match header, makes the edit conditional.
	Version *int32 `json:"version"`
}

// updateItem is a person's edit. An If-Match header (the ETag of a read)
// or a "version" field makes it conditional: a stale version is refused
// with 409 conflict; both, naming different versions, 400 (If-Match: *
// names none).
func (a *API) updateItem(c echo.Context) error {
	var req updateItemRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	ifVersion := req.Version
	if h := c.Request().Header.Get("If-Match"); h != "" && h != "*" {
		v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(h, "W/"), `"`), 10, 32)
		if err != nil {
			return wgerr.InvalidField("If-Match", "must be the item's ETag, e.g. \"3\"")
		}
		v32 := int32(v)
		if req.Version != nil && *req.Version != v32 {
			return wgerr.InvalidField("version", "is %d, but If-Match names version %d: give one of them, or the same version in both", *req.Version, v32)
		}
		ifVersion = &v32
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	patch := graph.ItemPatch{
		Title: req.Title, Body: req.Body, Priority: req.Priority, Labels: req.Labels, Requires: req.Requires, Touches: req.Touches, Metadata: req.Metadata, IfVersion: ifVersion,
	}
	if req.OnExpiry.set {
		v := ""
		if req.OnExpiry.value != nil {
			if *req.OnExpiry.value == "" {
				return wgerr.InvalidField("on_expiry", "must be \"retry\", \"reconcile\" or null (the project's default)")
			}
			v = *req.OnExpiry.value
		}
		patch.OnExpiry = &v
	}
	it, err := a.svc.Graph.UpdateItem(c.Request().Context(), p.ID, id, patch)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

type cancelRequest struct {
	Reason string `json:"reason"`
}

// cancelItem cancels the item and its open descendants; an active lease
// ends as cancelled.
func (a *API) cancelItem(c echo.Context) error {
	var req cancelRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	it, err := a.svc.Graph.Cancel(c.Request().Context(), p.ID, id, principal(c).String(), req.Reason)
	if err != nil {
		return err
	}
	return writeItem(c, http.StatusOK, it)
}

// itemGraph is the item's neighbourhood and its critical path (the longest
// chain of unfinished prerequisites ending at the item).
func (a *API) itemGraph(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	n, err := a.svc.Graph.Neighbourhood(ctx, p.ID, id)
	if err != nil {
		return err
	}
	path, err := a.svc.Graph.CriticalPath(ctx, p.ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.ItemGraph{
		Item: itemView(n.Item), Dependencies: itemRefs(n.Dependencies), Dependents: itemRefs(n.Dependents),
		Children: itemRefs(n.Children), Ancestors: itemRefs(n.Ancestors), CriticalPath: itemRefs(path),
	})
}

// projectGraph is the project's graph, or the part within ?depth= steps
// of ?around=<item id>, at most ?limit= nodes.
func (a *API) projectGraph(c echo.Context) error {
	if err := onlyQuery(c, "around", "depth", "limit"); err != nil {
		return err
	}
	var around *uuid.UUID
	if s := c.QueryParam("around"); s != "" {
		id, err := parseID("around", s)
		if err != nil {
			return err
		}
		around = &id
	}
	depth, err := queryInt(c, "depth")
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	d, l := 0, 0
	if depth != nil {
		if *depth < 1 || *depth > graph.MaxSubgraphDepth {
			return wgerr.InvalidField("depth", "must be between 1 and %d", graph.MaxSubgraphDepth)
		}
		d = *depth
	}
	if limit != nil {
		if *limit < 1 || *limit > graph.MaxSubgraphNodes {
			return wgerr.InvalidField("limit", "must be between 1 and %d", graph.MaxSubgraphNodes)
		}
		l = *limit
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	g, err := a.svc.Graph.Subgraph(c.Request().Context(), p.ID, around, d, l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, subgraphView(g))
}

// optionalString tells an absent member (set false) from an explicit null
// (set, value nil). It is the type of the members openapi.json declares
// nullable: decode refuses null for any other member but a raw JSON value.
type optionalString struct {
	set   bool
	value *string
}

// UnmarshalJSON is called only for a member that is present.
func (o *optionalString) UnmarshalJSON(b []byte) error {
	o.set = true
	return json.Unmarshal(b, &o.value)
}
