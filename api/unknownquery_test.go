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

// TestWriteTakesNoQuery: a POST, PUT, PATCH or DELETE takes its input in
// its body and refuses any query parameter (400 invalid_argument naming
// it) before it changes anything: POST .../plans?dry_run=true created the
// plan, since dry_run belongs in the body.
func TestWriteTakesNoQuery(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	plan := map[string]any{"items": []map[string]any{{"key": "a", "title": "from a plan"}}}
	p := f.do("POST", "/v1/projects/alpha/plans?dry_run=true", f.human.Token, plan).problem(t, 400, "invalid_argument")
	field(t, p, "dry_run")
	if d, _ := p["detail"].(string); !strings.Contains(d, "body") {
		t.Errorf("detail %q does not say the body takes it", p["detail"])
	}
	var page struct {
		Items []struct{ Title string } `json:"items"`
	}
	f.do("GET", "/v1/projects/alpha/items", f.human.Token, nil).ok(t, 200, &page)
	if len(page.Items) != 0 {
		t.Fatalf("a refused plan created %d items", len(page.Items))
	}
	it := f.mustItem(f.human.Token, map[string]any{"title": "x"})
	f.do("PATCH", "/v1/projects/alpha/items/"+it.ID+"?title=y", f.human.Token, map[string]any{"priority": 3}).problem(t, 400, "invalid_argument")
	f.do("POST", "/v1/projects/alpha/items/"+it.ID+"/cancel?reason=x", f.human.Token, nil).problem(t, 400, "invalid_argument")
	var got struct {
		State    string `json:"state"`
		Priority int    `json:"priority"`
	}
	f.do("GET", "/v1/projects/alpha/items/"+it.ID, f.human.Token, nil).ok(t, 200, &got)
	if got.State != "ready" || got.Priority != 0 {
		t.Fatalf("item after refused writes: %+v", got)
	}
}
