package api_test

import (
	"strings"
	"testing"
)

func TestProjects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	alpha := e.mustProject("alpha")
	e.mustProject("beta")
	human := e.mustToken("alpha", "ann", "human")
	agent := e.mustToken("alpha", "bot", "agent")

	t.Run("OK", func(t *testing.T) {
		if alpha.ID == "" || alpha.Name != "alpha" {
			t.Fatalf("project %+v", alpha)
		}
		var byID project
		e.do("GET", "/v1/projects/"+alpha.ID, human.Token, nil).ok(t, 200, &byID)
		if byID != alpha {
			t.Fatalf("by id %+v, want %+v", byID, alpha)
		}
	})
	t.Run("ListAdmin", func(t *testing.T) {
		var out struct{ Projects []project }
		e.do("GET", "/v1/projects", adminToken, nil).ok(t, 200, &out)
		if len(out.Projects) != 2 {
			t.Fatalf("admin sees %+v", out.Projects)
		}
	})
	t.Run("ErrAlreadyExists", func(t *testing.T) {
		e.do("POST", "/v1/projects", adminToken, map[string]any{"name": "alpha"}).problem(t, 409, "already_exists")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		for _, tok := range []string{human.Token, agent.Token} {
			e.do("POST", "/v1/projects", tok, map[string]any{"name": "gamma"}).problem(t, 403, "forbidden")
		}
		if n := e.count("SELECT count(*) FROM projects WHERE name = 'gamma'"); n != 0 {
			t.Fatal("a refused project was stored")
		}
	})
	t.Run("ErrOtherProject", func(t *testing.T) {
		e.do("GET", "/v1/projects/beta", human.Token, nil).problem(t, 404, "not_found")
		e.do("GET", "/v1/projects/beta", agent.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		cases := []struct{ body, field string }{
			{`{}`, "name"},
			{`{"name": ""}`, "name"},
			{`{"name": "Has Spaces"}`, "name"},
			{`{"name": 7}`, "name"},
			{`{"name": "ok", "id": "x"}`, "id"},
		}
		for _, c := range cases {
			p := e.do("POST", "/v1/projects", adminToken, c.body).problem(t, 400, "invalid_argument")
			field(t, p, c.field)
		}
		if n := e.count("SELECT count(*) FROM projects"); n != 2 {
			t.Fatalf("%d projects after refusals, want 2", n)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustProject("alpha")
	e.mustProject("beta")
	human := e.mustToken("alpha", "ann", "human")

	t.Run("OK", func(t *testing.T) {
		tok := e.mustToken("alpha", "bot", "agent")
		if !strings.HasPrefix(tok.Token, "wg_") || tok.Name != "bot" || tok.Role != "agent" {
			t.Fatalf("token %+v", tok)
		}
		var list struct {
			Tokens []map[string]any
		}
		r := e.do("GET", "/v1/projects/alpha/tokens", adminToken, nil)
		r.ok(t, 200, &list)
		if len(list.Tokens) != 2 {
			t.Fatalf("tokens %+v", list.Tokens)
		}
		if strings.Contains(string(r.body), tok.Token) || strings.Contains(string(r.body), "secret") {
			t.Fatal("the token list shows secrets")
		}
		for _, tk := range list.Tokens {
			if _, ok := tk["token"]; ok {
				t.Fatalf("listed token carries its bearer: %v", tk)
			}
		}
		// The new token works at once, in its project only.
		e.do("GET", "/v1/projects/alpha", tok.Token, nil).ok(t, 200, nil)
		e.do("GET", "/v1/projects/beta", tok.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		e.do("POST", "/v1/projects/alpha/tokens", human.Token, map[string]any{"name": "x", "role": "admin"}).problem(t, 403, "forbidden")
		e.do("GET", "/v1/projects/alpha/tokens", human.Token, nil).problem(t, 403, "forbidden")
		e.do("DELETE", "/v1/projects/alpha/tokens/"+human.ID, human.Token, nil).problem(t, 403, "forbidden")
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		before := e.count("SELECT count(*) FROM tokens")
		cases := []struct {
			body  any
			field string
		}{
			{map[string]any{"role": "agent"}, "name"},
			{map[string]any{"name": "x"}, "role"},
			{map[string]any{"name": "x", "role": "root"}, "role"},
			{map[string]any{"name": " ", "role": "agent"}, "name"},
			{map[string]any{"name": "x", "role": "agent", "secret": "mine"}, "secret"},
		}
		for _, c := range cases {
			field(t, e.do("POST", "/v1/projects/alpha/tokens", adminToken, c.body).problem(t, 400, "invalid_argument"), c.field)
		}
		if n := e.count("SELECT count(*) FROM tokens"); n != before {
			t.Fatal("a refused token was stored")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		e.do("POST", "/v1/projects/nope/tokens", adminToken, map[string]any{"name": "x", "role": "agent"}).problem(t, 404, "not_found")
		e.do("DELETE", "/v1/projects/beta/tokens/"+human.ID, adminToken, nil).problem(t, 404, "not_found")
		e.do("DELETE", "/v1/projects/alpha/tokens/not-a-uuid", adminToken, nil).problem(t, 404, "not_found")
	})
}
