package acceptance

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

func TestBootstrapToken(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	e := boot(t, dbURL, adminSecret)

	t.Run("OK", func(t *testing.T) {
		e.post(adminSecret, "/v1/projects", obj{"name": "boot"}).expect(t, http.StatusCreated)
	})
	t.Run("StoredHashed", func(t *testing.T) {
		if n := e.count(`SELECT count(*) FROM tokens t WHERE t::text LIKE '%' || $1 || '%'`, adminSecret); n != 0 {
			t.Fatalf("%d token rows contain the secret in clear", n)
		}
		if n := e.count(`SELECT count(*) FROM tokens WHERE role = 'admin' AND revoked_at IS NULL`); n != 1 {
			t.Fatalf("%d admin tokens, want 1", n)
		}
	})
	t.Run("RestartKeepsOne", func(t *testing.T) {
		e2 := boot(t, dbURL, adminSecret)
		e2.post(adminSecret, "/v1/projects", obj{"name": "boot2"}).expect(t, http.StatusCreated)
		if n := e.count(`SELECT count(*) FROM tokens WHERE role = 'admin'`); n != 1 {
			t.Fatalf("%d admin tokens after restart, want 1", n)
		}
	})
	t.Run("NoDefaultProjectWithBootstrap", func(t *testing.T) {
		// The first-start project is made only when no bootstrap token is given.
		if n := e.count(`SELECT count(*) FROM tokens WHERE role <> 'admin'`); n != 0 {
			t.Fatalf("%d non-admin tokens created at start", n)
		}
	})
}

// logStrings returns every string value of every JSON log record.
func logStrings(logs string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
			out = append(out, strings.Fields(x)...)
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			walk(rec)
		}
	}
	return out
}

func TestFirstStart(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.URL(t)
	e := boot(t, dbURL, "")

	if n := e.count(`SELECT count(*) FROM projects WHERE name = 'default'`); n != 1 {
		t.Fatalf("%d projects named default, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM tokens WHERE role = 'admin' AND revoked_at IS NULL`); n != 1 {
		t.Fatalf("%d admin tokens, want 1", n)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, e.url) {
		t.Errorf("the log does not show the UI address %s:\n%s", e.url, logs)
	}
	// Find the printed token: the one string of the log that signs in.
	var token string
	for _, s := range logStrings(logs) {
		if len(s) < 16 || strings.ContainsAny(s, " /") {
			continue
		}
		if e.post(s, "/v1/projects", obj{"name": "first"}).status == http.StatusCreated {
			token = s
			break
		}
	}
	if token == "" {
		t.Fatalf("no admin token that works in the log:\n%s", logs)
	}
	if n := e.count(`SELECT count(*) FROM tokens t WHERE t::text LIKE '%' || $1 || '%'`, token); n != 0 {
		t.Fatalf("the token is stored in clear")
	}
	e.get(token, "/v1/projects/default/items").expect(t, http.StatusOK)

	t.Run("SecondStartMakesNothing", func(t *testing.T) {
		e2 := boot(t, dbURL, "")
		if n := e2.count(`SELECT count(*) FROM tokens`); n != 1 {
			t.Fatalf("%d tokens after the second start, want 1", n)
		}
		if n := e2.count(`SELECT count(*) FROM projects WHERE name = 'default'`); n != 1 {
			t.Fatalf("%d default projects", n)
		}
		if strings.Contains(e2.logs.String(), token) {
			t.Fatalf("the token was printed again")
		}
		e2.get(token, "/v1/projects/default/items").expect(t, http.StatusOK)
	})
}

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	paths := []req{
		{method: http.MethodGet, path: "/v1/projects/alpha/items"},
		{method: http.MethodPost, path: "/v1/projects/alpha/items", body: obj{"title": "x"}},
		{method: http.MethodPost, path: "/v1/projects", body: obj{"name": "zzz"}},
		{method: http.MethodPost, path: "/v1/projects/alpha/claims", body: obj{"worker": "w"}},
		{method: http.MethodGet, path: "/v1/projects/alpha/leases"},
		{method: http.MethodGet, path: "/v1/projects/alpha/attention?state=open"},
	}
	for _, r := range paths {
		t.Run("Missing", func(t *testing.T) {
			w.send(r).problem(t, http.StatusUnauthorized, "unauthenticated")
		})
		t.Run("Unknown", func(t *testing.T) {
			r.token = "wg_not_a_real_token_at_all_0000000000"
			w.send(r).problem(t, http.StatusUnauthorized, "unauthenticated")
		})
		t.Run("NotBearer", func(t *testing.T) {
			r.header = map[string]string{"Authorization": "Basic " + w.human}
			w.send(r).problem(t, http.StatusUnauthorized, "unauthenticated")
		})
	}
	if n := w.count(`SELECT count(*) FROM items`); n != 0 {
		t.Fatalf("%d items stored by unauthenticated requests", n)
	}
	if n := w.count(`SELECT count(*) FROM projects WHERE name = 'zzz'`); n != 0 {
		t.Fatalf("project stored by an unauthenticated request")
	}
}

func TestProjects(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("OK", func(t *testing.T) {
		body := w.post(w.admin, "/v1/projects", obj{"name": "gamma"}).expect(t, http.StatusCreated)
		if body["name"] != "gamma" {
			t.Fatalf("name %v", body["name"])
		}
		str(t, body, "id")
		if n := w.count(`SELECT count(*) FROM projects WHERE name = 'gamma'`); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("ErrAlreadyExists", func(t *testing.T) {
		w.post(w.admin, "/v1/projects", obj{"name": "alpha"}).problem(t, http.StatusConflict, "already_exists")
		if n := w.count(`SELECT count(*) FROM projects WHERE name = 'alpha'`); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("ErrEmptyName", func(t *testing.T) {
		w.post(w.admin, "/v1/projects", obj{"name": ""}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "name")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		w.post(w.human, "/v1/projects", obj{"name": "h"}).problem(t, http.StatusForbidden, "forbidden")
		w.post(w.agent, "/v1/projects", obj{"name": "a"}).problem(t, http.StatusForbidden, "forbidden")
		if n := w.count(`SELECT count(*) FROM projects WHERE name IN ('h', 'a')`); n != 0 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("PathByID", func(t *testing.T) {
		body := w.post(w.admin, "/v1/projects", obj{"name": "delta"}).expect(t, http.StatusCreated)
		id := str(t, body, "id")
		it := w.item(w.admin, id, obj{"title": "by id"})
		w.getItem(w.admin, "delta", str(t, it, "id"))
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("OK", func(t *testing.T) {
		for _, role := range []string{"agent", "human", "admin"} {
			body := w.post(w.admin, "/v1/projects/alpha/tokens", obj{"name": "t-" + role, "role": role}).expect(t, http.StatusCreated)
			tok := str(t, body, "token")
			if body["name"] != "t-"+role || body["role"] != role {
				t.Fatalf("answer %v", body)
			}
			if n := w.count(`SELECT count(*) FROM tokens t WHERE t::text LIKE '%' || $1 || '%'`, tok); n != 0 {
				t.Fatalf("token stored in clear")
			}
			if n := w.count(`SELECT count(*) FROM tokens WHERE name = $1 AND role = $2`, "t-"+role, role); n != 1 {
				t.Fatalf("%d rows for %s", n, role)
			}
			w.get(tok, "/v1/projects/alpha/items").expect(t, http.StatusOK)
		}
	})
	t.Run("ErrRole", func(t *testing.T) {
		w.post(w.admin, "/v1/projects/alpha/tokens", obj{"name": "x", "role": "root"}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "role")
		w.post(w.admin, "/v1/projects/alpha/tokens", obj{"name": "x"}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "role")
		if n := w.count(`SELECT count(*) FROM tokens WHERE name = 'x'`); n != 0 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		w.post(w.human, "/v1/projects/alpha/tokens", obj{"name": "y", "role": "agent"}).problem(t, http.StatusForbidden, "forbidden")
		w.post(w.agent, "/v1/projects/alpha/tokens", obj{"name": "y", "role": "agent"}).problem(t, http.StatusForbidden, "forbidden")
		if n := w.count(`SELECT count(*) FROM tokens WHERE name = 'y'`); n != 0 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("ErrUnknownProject", func(t *testing.T) {
		w.post(w.admin, "/v1/projects/nope/tokens", obj{"name": "z", "role": "agent"}).problem(t, http.StatusNotFound, "not_found")
	})
	t.Run("Revoke", func(t *testing.T) {
		body := w.post(w.admin, "/v1/projects/alpha/tokens", obj{"name": "doomed", "role": "agent"}).expect(t, http.StatusCreated)
		tok := str(t, body, "token")
		id, _ := body["id"].(string)
		if id == "" {
			t.Fatalf("token answer has no id to revoke it by: %v", body)
		}
		w.get(tok, "/v1/projects/alpha/items").expect(t, http.StatusOK)
		w.del(w.human, "/v1/projects/alpha/tokens/"+id).problem(t, http.StatusForbidden, "forbidden")
		w.del(w.admin, "/v1/projects/alpha/tokens/"+id).expect(t, http.StatusOK, http.StatusNoContent)
		w.get(tok, "/v1/projects/alpha/items").problem(t, http.StatusUnauthorized, "unauthenticated")
		w.post(tok, "/v1/projects/alpha/claims", obj{"worker": "w"}).problem(t, http.StatusUnauthorized, "unauthenticated")
		if n := w.count(`SELECT count(*) FROM tokens WHERE name = 'doomed' AND revoked_at IS NOT NULL`); n != 1 {
			t.Fatalf("revocation not stored")
		}
	})
}

func TestRoles(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	a := w.item(w.admin, w.p, obj{"title": "a"})
	aID := str(t, a, "id")
	qItem := w.item(w.admin, w.q, obj{"title": "q item"})
	qID := str(t, qItem, "id")

	t.Run("Agent", func(t *testing.T) {
		b := w.item(w.agent, w.p, obj{"title": "b by agent"})
		bID := str(t, b, "id")
		w.post(w.agent, "/v1/projects/alpha/items/"+bID+"/dependencies", obj{"depends_on": aID}).expect(t, http.StatusCreated)
		w.get(w.agent, "/v1/projects/alpha/items/"+bID).expect(t, http.StatusOK)
		w.get(w.agent, "/v1/projects/alpha/items").expect(t, http.StatusOK)
		w.get(w.agent, "/v1/projects/alpha/leases").expect(t, http.StatusOK)
		w.get(w.agent, "/v1/projects/alpha/items/"+bID+"/leases").expect(t, http.StatusOK)
		w.get(w.agent, "/v1/projects/alpha/attention?state=open").expect(t, http.StatusOK)
		w.patch(w.agent, "/v1/projects/alpha/items/"+bID, obj{"priority": 3}).problem(t, http.StatusForbidden, "forbidden")
		w.post(w.agent, "/v1/projects/alpha/items/"+bID+"/cancel", obj{}).problem(t, http.StatusForbidden, "forbidden")
		w.del(w.agent, "/v1/projects/alpha/items/"+bID+"/dependencies/"+aID).problem(t, http.StatusForbidden, "forbidden")
		w.post(w.agent, "/v1/projects", obj{"name": "agentproj"}).problem(t, http.StatusForbidden, "forbidden")
		w.post(w.agent, "/v1/projects/alpha/tokens", obj{"name": "n", "role": "agent"}).problem(t, http.StatusForbidden, "forbidden")
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND status = 'open' AND priority = 0`, bID); n != 1 {
			t.Fatalf("refused agent calls changed the item")
		}
		if n := w.count(`SELECT count(*) FROM dependencies WHERE item_id = $1`, bID); n != 1 {
			t.Fatalf("refused agent call removed the dependency")
		}
	})
	t.Run("Human", func(t *testing.T) {
		c := w.item(w.human, w.p, obj{"title": "c by human"})
		cID := str(t, c, "id")
		w.patch(w.human, "/v1/projects/alpha/items/"+cID, obj{"priority": 2}).expect(t, http.StatusOK)
		w.post(w.human, "/v1/projects/alpha/items/"+cID+"/dependencies", obj{"depends_on": aID}).expect(t, http.StatusCreated)
		w.del(w.human, "/v1/projects/alpha/items/"+cID+"/dependencies/"+aID).expect(t, http.StatusOK, http.StatusNoContent)
		w.get(w.human, "/v1/projects/alpha/leases").expect(t, http.StatusOK)
		w.get(w.human, "/v1/projects/alpha/attention?state=open").expect(t, http.StatusOK)
		w.post(w.human, "/v1/projects/alpha/claims", obj{"worker": "h"}).problem(t, http.StatusForbidden, "forbidden")
		if n := w.count(`SELECT count(*) FROM leases`); n != 0 {
			t.Fatalf("a human's claim made a lease")
		}
		// A human does not hold leases: the agent's lease is refused to it.
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
		lid := str(t, lease, "id")
		for _, op := range []string{"heartbeat", "complete", "release", "fail"} {
			w.leaseCall(w.human, lid, op, obj{"epoch": integer(t, lease, "epoch")}).problem(t, http.StatusForbidden, "forbidden")
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, lid); n != 1 {
			t.Fatalf("a human's lease call ended the lease")
		}
		w.post(w.human, "/v1/projects/alpha/items/"+cID+"/cancel", obj{}).expect(t, http.StatusOK)
	})
	t.Run("Admin", func(t *testing.T) {
		d := w.item(w.admin, w.p, obj{"title": "d", "priority": 100})
		lease, item := w.claim(w.admin, w.p, obj{"worker": "admin-w"})
		if item["id"] != d["id"] {
			t.Fatalf("claimed %v, want %v", item["id"], d["id"])
		}
		w.leaseCall(w.admin, str(t, lease, "id"), "complete", obj{"epoch": integer(t, lease, "epoch"), "result": "ok"}).expect(t, http.StatusOK)
		w.get(w.admin, "/v1/projects/beta/items/"+qID).expect(t, http.StatusOK)
	})
	t.Run("OtherProject404", func(t *testing.T) {
		for _, tok := range []string{w.human, w.agent} {
			w.get(tok, "/v1/projects/beta/items").problem(t, http.StatusNotFound, "not_found")
			w.get(tok, "/v1/projects/beta/items/"+qID).problem(t, http.StatusNotFound, "not_found")
			w.get(tok, "/v1/projects/alpha/items/"+qID).problem(t, http.StatusNotFound, "not_found")
			w.get(tok, "/v1/projects/beta/leases").problem(t, http.StatusNotFound, "not_found")
			w.get(tok, "/v1/projects/beta/attention?state=open").problem(t, http.StatusNotFound, "not_found")
			w.post(tok, "/v1/projects/beta/items", obj{"title": "intruder"}).problem(t, http.StatusNotFound, "not_found")
			w.post(tok, "/v1/projects/alpha/items/"+aID+"/dependencies", obj{"depends_on": qID}).problem(t, http.StatusNotFound, "not_found")
			w.post(tok, "/v1/projects/beta/claims", obj{"worker": "w"}).problem(t, http.StatusNotFound, "not_found")
		}
		w.patch(w.human, "/v1/projects/beta/items/"+qID, obj{"title": "mine"}).problem(t, http.StatusNotFound, "not_found")
		w.post(w.human, "/v1/projects/beta/items/"+qID+"/cancel", obj{}).problem(t, http.StatusNotFound, "not_found")
		// A lease and an attention request of project beta.
		lease, _ := w.claim(w.qAgent, w.q, obj{"worker": "qw"})
		lid := str(t, lease, "id")
		ep := integer(t, lease, "epoch")
		w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": ep}).problem(t, http.StatusNotFound, "not_found")
		w.leaseCall(w.agent, lid, "complete", obj{"epoch": ep, "result": 1}).problem(t, http.StatusNotFound, "not_found")
		att := w.leaseCall(w.qAgent, lid, "attention", obj{"epoch": ep, "question": "q?"}).expect(t, http.StatusOK, http.StatusCreated)
		attID := attentionID(t, att)
		w.post(w.human, "/v1/attention/"+attID+"/resolve", obj{"answer": "no"}).problem(t, http.StatusNotFound, "not_found")
		w.post(w.agent, "/v1/attention/"+attID+"/resolve", obj{"answer": "no"}).problem(t, http.StatusNotFound, "not_found")
		w.leaseCall(w.human, lid, "heartbeat", obj{"epoch": ep}).problem(t, http.StatusNotFound, "not_found")
		if n := w.count(`SELECT count(*) FROM attention_requests WHERE state = 'open'`); n != 1 {
			t.Fatalf("another project's human resolved the request")
		}
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'intruder'`); n != 0 {
			t.Fatalf("item stored in another project")
		}
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND title = 'q item' AND status = 'open'`, qID); n != 1 {
			t.Fatalf("another project's item changed")
		}
	})
}

// attentionID is the new request's id in the answer to a lease's attention
// call: {attention: {id, ...}, lease}, as fail and claim name it.
func attentionID(t *testing.T, body obj) string {
	t.Helper()
	return str(t, sub(t, body, "attention"), "id")
}
