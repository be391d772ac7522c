package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/workgraph-dev/workgraph/fence"
)

// TestFenceKeysRefuseBadQuery: the public keys document, at /v1/fence/keys
// and at the well-known path, refuses a query parameter that cannot be
// stored like every route: 400 invalid_argument naming it, a problem
// (documented in openapi.json), never a 500 in another shape.
func TestFenceKeysRefuseBadQuery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	field(t, e.do(http.MethodGet, "/v1/fence/keys?x=%00", "", nil).problem(t, http.StatusBadRequest, "invalid_argument"), "x")

	r := e.do(http.MethodGet, fence.KeysPath+"?x=%00", "", nil)
	field(t, r.problem(t, http.StatusBadRequest, "invalid_argument"), "x")
	var keys struct {
		Keys []json.RawMessage `json:"keys"`
	}
	e.do(http.MethodGet, fence.KeysPath, "", nil).ok(t, http.StatusOK, &keys)
	if len(keys.Keys) == 0 {
		t.Fatal("no keys at the well-known path")
	}
}
