package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountIDs(e *echo.Echo) {
	a.handle(e, http.MethodGet, "/projects/:project/ids", a.lookupIDs, anyRole)
}

// lookupIDs: ?prefix= (at least 4 hex digits of an id) and kind= (item,
// lease, attention, token; repeated or comma-separated; default all)
// answer the project's objects whose id starts with the prefix, so that a
// person may type the first characters of an id. Tokens are matched for
// admin callers only (only they may list tokens).
func (a *API) lookupIDs(c echo.Context) error {
	if err := onlyQuery(c, "prefix", "kind"); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	var kinds []graph.IDKind
	for _, v := range c.QueryParams()["kind"] {
		for _, k := range strings.Split(v, ",") {
			kinds = append(kinds, graph.IDKind(strings.TrimSpace(k)))
		}
	}
	if len(kinds) == 0 {
		kinds = graph.IDKinds
	}
	if !principal(c).IsAdmin() {
		kept := kinds[:0:0]
		for _, k := range kinds {
			if k != graph.KindToken {
				kept = append(kept, k)
			}
		}
		if len(kept) == 0 {
			if _, _, err := graph.IDPrefixRange(c.QueryParam("prefix")); err != nil {
				return err
			}
			return c.JSON(http.StatusOK, wire.IDMatches{Matches: []wire.IDMatch{}})
		}
		kinds = kept
	}
	ms, err := a.svc.Graph.LookupIDs(c.Request().Context(), p.ID, c.QueryParam("prefix"), kinds)
	if err != nil {
		return err
	}
	out := wire.IDMatches{Matches: make([]wire.IDMatch, len(ms))}
	for i, m := range ms {
		out.Matches[i] = wire.IDMatch{Kind: string(m.Kind), ID: m.ID.String(), Label: m.Label, CreatedAt: m.CreatedAt}
	}
	return c.JSON(http.StatusOK, out)
}
