package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountPlans(e *echo.Echo) {
	o := anyRole
	o.bodyLimit = bodyLimit{bytes: maxPlanBodyBytes,
		of: fmt.Sprintf("a plan import (which takes at most %d items)", graph.MaxPlanItems)}
	o.admit = a.gatePlans
	a.handle(e, http.MethodPost, "/projects/:project/plans", a.importPlan, o)
}

// planItemRequest is one item of a plan: key (local to the plan),
// depends_on (keys of the plan or ids of existing items), children created
// below it, and optionally the source line the importer read it from.
type planItemRequest struct {
	Key       string            `json:"key"`
	Title     *string           `json:"title"`
	Body      string            `json:"body"`
	Priority  int32             `json:"priority"`
	Labels    []string          `json:"labels"`
	Requires  []string          `json:"requires"`
	Touches   []string          `json:"touches"`
	DependsOn []string          `json:"depends_on"`
	Children  []planItemRequest `json:"children"`
	Line      int               `json:"line"`
	OnExpiry  string            `json:"on_expiry"`
}

type planRequest struct {
	Items  []planItemRequest `json:"items"`
	DryRun bool              `json:"dry_run"`
}

// importPlan creates a whole plan in one transaction (all or nothing):
// 201 {items, keys, existing}; with dry_run nothing is stored and the
// answer is 200. Items whose key exists in the project are left alone and
// listed in existing, not in items.
func (a *API) importPlan(c echo.Context) error {
	var req planRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if len(req.Items) == 0 {
		return wgerr.InvalidField("items", "must list at least one item")
	}
	plan, err := planItems(req.Items, "items")
	if err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	res, err := a.svc.Graph.ImportPlan(c.Request().Context(), p.ID, plan, principal(c).String(), req.DryRun)
	if err != nil {
		return err
	}
	keys := make(map[string]string, len(res.Keys))
	for k, id := range res.Keys {
		keys[k] = id.String()
	}
	status := http.StatusCreated
	if req.DryRun {
		status = http.StatusOK
	}
	existing := make(map[string]wire.ExistingItem, len(res.Existing))
	for k, e := range res.Existing {
		differs := e.Differs
		if differs == nil {
			differs = []string{}
		}
		existing[k] = wire.ExistingItem{ID: e.ID.String(), Differs: differs}
	}
	return c.JSON(status, wire.PlanResult{Items: itemRefs(res.Items), Keys: keys, Existing: existing, DryRun: req.DryRun})
}

func planItems(in []planItemRequest, path string) ([]graph.PlanItem, error) {
	out := make([]graph.PlanItem, len(in))
	for i, it := range in {
		at := fmt.Sprintf("%s[%d]", path, i)
		if it.Title == nil {
			return nil, wgerr.InvalidField(at+".title", "is required (key %q)", it.Key)
		}
		kids, err := planItems(it.Children, at+".children")
		if err != nil {
			return nil, err
		}
		out[i] = graph.PlanItem{Key: it.Key, Title: *it.Title, Body: it.Body, Priority: it.Priority, Labels: it.Labels, Requires: it.Requires, Touches: it.Touches,
			DependsOn: it.DependsOn, Children: kids, Line: it.Line, OnExpiry: it.OnExpiry}
	}
	return out, nil
}
