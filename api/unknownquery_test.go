package api_test

import (
	"strings"
	"testing"
)

// TestUnknownQueryParameterRefused: every GET route refuses a query
// parameter it does not know (400 invalid_argument naming it), as most
// did: a misspelt filter must not silently answer something else. The
// project and the item answered 200.
func TestUnknownQueryParameterRefused(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{"title": "x"})
	var c claimed
	f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, map[string]any{"worker": "w"}).ok(t, 201, &c)
	for _, path := range []string{
		"/v1/projects",
		"/v1/projects/alpha",
		"/v1/projects/alpha/items",
		"/v1/projects/alpha/items/" + it.ID,
		"/v1/projects/alpha/items/" + it.ID + "/graph",
		"/v1/projects/alpha/items/" + it.ID + "/leases",
		"/v1/projects/alpha/items/" + it.ID + "/attention",
		"/v1/projects/alpha/items/" + it.ID + "/cost",
		"/v1/projects/alpha/graph",
		"/v1/projects/alpha/ids",
		"/v1/projects/alpha/leases",
		"/v1/projects/alpha/workers",
		"/v1/projects/alpha/attention",
		"/v1/projects/alpha/events",
		"/v1/projects/alpha/tokens",
		"/v1/projects/alpha/webhooks",
		"/v1/projects/alpha/notifications",
		"/v1/leases/" + c.Lease.ID,
	} {
		tok := f.human.Token
		if strings.HasSuffix(path, "/tokens") {
			tok = adminToken
		}
		p := f.do("GET", path+"?colour=red", tok, nil).problem(t, 400, "invalid_argument")
		field(t, p, "colour")
	}
}
