package api

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountAttention(e *echo.Echo) {
	a.handle(e, http.MethodGet, "/projects/:project/attention", a.listAttention, anyRole)
	a.handle(e, http.MethodGet, "/attention/:id", a.getAttention, anyRole)
	a.handle(e, http.MethodPost, "/attention/:id/resolve", a.resolveAttention, people)
	a.handle(e, http.MethodPost, "/attention/:id/dismiss", a.dismissAttention, people)
	a.handle(e, http.MethodPost, "/projects/:project/items/:id/attention", a.holdItem, people)
	a.handle(e, http.MethodGet, "/projects/:project/items/:id/attention", a.itemAttention, anyRole)
}

// attentionProject resolves the {id} of an /attention route to the
// request's project, refusing (as not found) one the caller may not see.
func (a *API) attentionProject(c echo.Context) (project, id uuid.UUID, err error) {
	return a.resourceProject(c, "attention request", a.svc.Attention.ProjectOf)
}

// listAttention: ?state=open|resolved|dismissed, item_id=, cursor=,
// limit=; oldest first.
func (a *API) listAttention(c echo.Context) error {
	if err := onlyQuery(c, "state", "item_id", "cursor", "limit", "page_size"); err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	f := attention.Filter{Cursor: c.QueryParam("cursor"), Limit: limit}
	if s := c.QueryParam("state"); s != "" {
		st := attention.State(s)
		if st != attention.StateOpen && st != attention.StateResolved && st != attention.StateDismissed {
			return wgerr.InvalidField("state", "unknown state %q (open, resolved, dismissed)", s)
		}
		f.State = &st
	}
	if f.ItemID, err = queryID(c, "item_id"); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	page, err := a.svc.Attention.List(c.Request().Context(), p.ID, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.AttentionPage{Attention: attentionViews(page.Requests), NextCursor: cursor(page.NextCursor)})
}

func (a *API) getAttention(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	project, id, err := a.attentionProject(c)
	if err != nil {
		return err
	}
	r, err := a.svc.Attention.Get(c.Request().Context(), project, id)
	if err != nil {
		return err
	}
	return a.writeAttention(c, r)
}

// writeAttention answers 200 with a request; an uncertain_outcome request
// carries the late reports of its expired attempt, for whoever decides.
func (a *API) writeAttention(c echo.Context, r attention.Request) error {
	v := attentionView(r)
	if r.Reason == attention.ReasonUncertainOutcome && r.LeaseID != nil {
		// The first page of them; the lease's page (GET /v1/leases/{id})
		// has the rest.
		obs, err := a.svc.Leases.Observations(c.Request().Context(), r.ProjectID, *r.LeaseID, "", 0)
		if err != nil {
			return err
		}
		v.LateReports = observationViews(obs.Observations)
	}
	return c.JSON(http.StatusOK, v)
}

// resolveRequest answers a request (answer) or decides an uncertain outcome
// (decision, with result for done, and an optional note).
type resolveRequest struct {
	Answer   *string             `json:"answer"`
	Decision *attention.Decision `json:"decision"`
	Result   json.RawMessage     `json:"result"`
	Note     string              `json:"note"`
}

// resolveAttention answers a request once (a second answer: 409 conflict);
// an uncertain_outcome request is resolved with a decision instead.
func (a *API) resolveAttention(c echo.Context) error {
	var req resolveRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	switch {
	case req.Answer != nil && req.Decision != nil:
		return wgerr.InvalidField("decision", "give an answer or a decision, not both")
	case req.Answer == nil && req.Decision == nil:
		return wgerr.InvalidField("answer", "is required (or, for an uncertain_outcome request, decision)")
	case req.Answer != nil && (len(req.Result) > 0 || req.Note != ""):
		return wgerr.InvalidField("result", "result and note go with a decision")
	}
	project, id, err := a.attentionProject(c)
	if err != nil {
		return err
	}
	var r attention.Request
	if req.Decision != nil {
		result := req.Result
		if string(result) == "null" {
			result = nil
		}
		r, err = a.svc.Attention.Decide(c.Request().Context(), project, id, *req.Decision, result, req.Note, principal(c).String())
	} else {
		r, err = a.svc.Attention.Resolve(c.Request().Context(), project, id, *req.Answer, principal(c).String())
	}
	if err != nil {
		return err
	}
	if r.ResolvedAt != nil {
		c.Set(answeredKey, r.ResolvedAt.Sub(r.CreatedAt))
	}
	return a.writeAttention(c, r)
}

type dismissRequest struct {
	Note string `json:"note"`
}

func (a *API) dismissAttention(c echo.Context) error {
	var req dismissRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	project, id, err := a.attentionProject(c)
	if err != nil {
		return err
	}
	r, err := a.svc.Attention.Dismiss(c.Request().Context(), project, id, principal(c).String(), req.Note)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, attentionView(r))
}

type holdRequest struct {
	Question string `json:"question"`
}

// holdItem is a person's hold on an item ("don't start this until I say"):
// 201 with the blocking request, or 200 with the hold the same person has
// open on the item already (a person holds an item once).
func (a *API) holdItem(c echo.Context) error {
	var req holdRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	r, created, err := a.svc.Attention.HoldOnce(c.Request().Context(), p.ID, id, req.Question, principal(c).String())
	if err != nil {
		return err
	}
	if !created {
		return c.JSON(http.StatusOK, attentionView(r))
	}
	return c.JSON(http.StatusCreated, attentionView(r))
}

// itemAttention: a page of the item's requests, oldest first.
func (a *API) itemAttention(c echo.Context) error {
	if err := onlyQuery(c, "cursor", "limit", "page_size"); err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	p, id, err := a.projectItem(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := a.svc.Graph.Item(ctx, p.ID, id); err != nil {
		return err
	}
	page, err := a.svc.Attention.ForItem(ctx, p.ID, id, c.QueryParam("cursor"), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.AttentionPage{Attention: attentionViews(page.Requests), NextCursor: cursor(page.NextCursor)})
}
