package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

//go:embed openapi.json
var openAPIDoc []byte

// OpenAPIDocument is the OpenAPI 3.1 document of the API (served at
// /v1/openapi.json).
func OpenAPIDocument() []byte { return openAPIDoc }

func (a *API) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPIDoc)
}
