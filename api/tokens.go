package api

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func tokenView(t auth.Token) wire.Token {
	return wire.Token{ID: t.ID.String(), ProjectID: optID(t.ProjectID), Name: t.Name, Role: string(t.Role),
		CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt}
}

func (a *API) mountTokens(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/tokens", a.createToken, adminOnly)
	a.handle(e, http.MethodGet, "/projects/:project/tokens", a.listTokens, adminOnly)
	a.handle(e, http.MethodDelete, "/projects/:project/tokens/:id", a.revokeToken, adminOnly)
}

type createTokenRequest struct {
	Name *string `json:"name"`
	Role *string `json:"role"`
}

func (a *API) createToken(c echo.Context) error {
	var req createTokenRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return wgerr.InvalidField("name", "is required")
	}
	if req.Role == nil {
		return wgerr.InvalidField("role", "is required (admin, human or agent)")
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	t, bearer, err := a.auth.Create(c.Request().Context(), &p.ID, *req.Name, auth.Role(*req.Role))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, wire.CreatedToken{Secret: bearer, Token: tokenView(t)})
}

func (a *API) listTokens(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	ts, err := a.auth.List(c.Request().Context(), p.ID)
	if err != nil {
		return err
	}
	out := wire.TokenList{Tokens: make([]wire.Token, len(ts))}
	for i, t := range ts {
		out.Tokens[i] = tokenView(t)
	}
	return c.JSON(http.StatusOK, out)
}

// revokeToken revokes at once: the next request with the token is refused.
func (a *API) revokeToken(c echo.Context) error {
	p, err := a.project(c)
	if err != nil {
		return err
	}
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if _, err := a.auth.Revoke(c.Request().Context(), p.ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// pathID parses a UUID path parameter; a malformed id is not found (no
// resource can have it).
func pathID(c echo.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, wgerr.New(wgerr.CodeNotFound, "%s %q not found", name, c.Param(name))
	}
	return id, nil
}
