package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// mountFence serves the public key destinations verify fence tokens with,
// at /v1/fence/keys and at the well-known fence.KeysPath.
func (a *API) mountFence(e *echo.Echo) {
	a.handlePublic(e, http.MethodGet, "/fence/keys", a.fenceKeys)
	e.GET(fence.KeysPath, a.fenceKeys, checkParams, a.bounded(a.timeout))
}

// fenceKeys: 200 {keys: [{kid, alg, public_key}]}.
func (a *API) fenceKeys(c echo.Context) error {
	if a.svc.Fence == nil {
		return wgerr.New(wgerr.CodeNotFound, "this server signs no fence tokens")
	}
	// The key changes only with a new deployment; a destination may cache it.
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, a.svc.Fence.Keys())
}

// fenceToken signs l's fence token ("" when the server signs none).
func (a *API) fenceToken(l lease.Lease) (string, error) {
	if a.svc.Fence == nil {
		return "", nil
	}
	return a.svc.Fence.Sign(l)
}
