package api_test

import (
	"testing"
)

// TestLookupIDs: the id lookup answers the project's objects by the first
// characters of their id, tokens for admins only; a bad prefix is 400 on
// prefix; another project's objects and a missing project are not found.
func TestLookupIDs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("p")
	e.mustProject("q")
	agent := e.mustToken("p", "agent-1", "agent")
	var it struct {
		ID string `json:"id"`
	}
	e.do("POST", "/v1/projects/p/items", agent.Token, map[string]any{"title": "Find me"}).ok(t, 201, &it)
	type matches struct {
		Matches []struct {
			Kind, ID, Label string
		} `json:"matches"`
	}

	t.Run("OK", func(t *testing.T) {
		var m matches
		e.do("GET", "/v1/projects/p/ids?prefix="+it.ID[:8], agent.Token, nil).ok(t, 200, &m)
		if len(m.Matches) != 1 || m.Matches[0].Kind != "item" || m.Matches[0].ID != it.ID || m.Matches[0].Label != "Find me" {
			t.Fatalf("matches = %+v", m)
		}
	})
	t.Run("TokensForAdminsOnly", func(t *testing.T) {
		var m matches
		e.do("GET", "/v1/projects/p/ids?kind=token&prefix="+agent.ID[:8], agent.Token, nil).ok(t, 200, &m)
		if len(m.Matches) != 0 {
			t.Fatalf("an agent sees tokens: %+v", m)
		}
		e.do("GET", "/v1/projects/p/ids?kind=token&prefix="+agent.ID[:8], adminToken, nil).ok(t, 200, &m)
		if len(m.Matches) != 1 || m.Matches[0].Kind != "token" || m.Matches[0].Label != "agent-1" {
			t.Fatalf("admin's token matches = %+v", m)
		}
	})
	t.Run("OtherProject", func(t *testing.T) {
		var m matches
		e.do("GET", "/v1/projects/q/ids?prefix="+it.ID[:8], adminToken, nil).ok(t, 200, &m)
		if len(m.Matches) != 0 {
			t.Fatalf("project q answers p's item: %+v", m)
		}
		p := e.do("GET", "/v1/projects/q/ids?prefix="+it.ID[:8], agent.Token, nil).problem(t, 404, "not_found")
		field(t, p, "project")
		p = e.do("GET", "/v1/projects/nope/items", agent.Token, nil).problem(t, 404, "not_found")
		field(t, p, "project")
	})
	t.Run("ErrPrefix", func(t *testing.T) {
		for _, q := range []string{"prefix=abc", "prefix=zzzz", "prefix=", "kind=project&prefix=abcd", "prefix=abcd&other=1"} {
			p := e.do("GET", "/v1/projects/p/ids?"+q, agent.Token, nil).problem(t, 400, "invalid_argument")
			if p["field"] == nil {
				t.Errorf("%s: no field in %v", q, p)
			}
		}
	})
	t.Run("SortedLists", func(t *testing.T) {
		var page struct {
			Items []struct{ ID string } `json:"items"`
		}
		var second struct{ ID string }
		e.do("POST", "/v1/projects/p/items", agent.Token, map[string]any{"title": "Second"}).ok(t, 201, &second)
		e.do("GET", "/v1/projects/p/items?sort=-created", agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 2 || page.Items[0].ID != second.ID {
			t.Fatalf("newest first: %+v", page)
		}
		e.do("GET", "/v1/projects/p/leases?sort=-ran", agent.Token, nil).ok(t, 200, nil)
		field(t, e.do("GET", "/v1/projects/p/items?sort=title", agent.Token, nil).problem(t, 400, "invalid_argument"), "sort")
		field(t, e.do("GET", "/v1/projects/p/leases?sort=worker", agent.Token, nil).problem(t, 400, "invalid_argument"), "sort")
	})
}
