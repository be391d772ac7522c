package acceptance

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/workgraph-dev/workgraph/server"
)

func TestStrictInput(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	items := "/v1/projects/alpha/items"
	cases := []struct {
		name, body, field string
		status            int
		code              string
	}{
		{"UnknownField", `{"title": "t1", "colour": "red"}`, "colour", 400, "invalid_argument"},
		{"TitleNumber", `{"title": 5}`, "title", 400, "invalid_argument"},
		{"PriorityString", `{"title": "t2", "priority": "high"}`, "priority", 400, "invalid_argument"},
		{"PriorityFloat", `{"title": "t2", "priority": 1.5}`, "priority", 400, "invalid_argument"},
		{"LabelsString", `{"title": "t3", "labels": "x"}`, "labels", 400, "invalid_argument"},
		{"DependsOnString", `{"title": "t4", "depends_on": "x"}`, "depends_on", 400, "invalid_argument"},
		{"ParentNotUUID", `{"title": "t4", "parent_id": "x"}`, "parent_id", 400, "invalid_argument"},
		{"EmptyTitle", `{"title": ""}`, "title", 400, "invalid_argument"},
		{"BlankTitle", `{"title": "   "}`, "title", 400, "invalid_argument"},
		{"NoTitle", `{"body": "b"}`, "title", 400, "invalid_argument"},
		{"Epoch", `{"title": "t5", "epoch": 3}`, "epoch", 400, "invalid_argument"},
		{"State", `{"title": "t6", "state": "done"}`, "state", 400, "invalid_argument"},
		{"Project", `{"title": "t7", "project": "beta"}`, "project", 400, "invalid_argument"},
		{"ProjectID", `{"title": "t7", "project_id": "00000000-0000-4000-8000-000000000001"}`, "project_id", 400, "invalid_argument"},
		{"ID", `{"title": "t8", "id": "00000000-0000-4000-8000-000000000001"}`, "id", 400, "invalid_argument"},
		{"Result", `{"title": "t9", "result": {"done": true}}`, "result", 400, "invalid_argument"},
		{"LeaseID", `{"title": "t9", "lease_id": "00000000-0000-4000-8000-000000000001"}`, "lease_id", 400, "invalid_argument"},
		{"MalformedJSON", `{"title": `, "", 400, "invalid_argument"},
		{"NotAnObject", `["title"]`, "", 400, "invalid_argument"},
		{"TrailingData", `{"title": "t10"} {"title": "t11"}`, "", 400, "invalid_argument"},
		{"EmptyBody", ``, "", 400, "invalid_argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.send(req{method: http.MethodPost, path: items, token: w.human, body: c.body})
			if c.field != "" {
				r.problemNaming(t, c.status, c.code, c.field)
			} else {
				r.problem(t, c.status, c.code)
			}
		})
	}
	t.Run("TooLarge", func(t *testing.T) {
		big := `{"title": "huge", "body": "` + strings.Repeat("a", 1536*1024) + `"}`
		w.send(req{method: http.MethodPost, path: items, token: w.human, body: big}).problem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
		w.send(req{method: http.MethodPost, path: "/v1/projects/alpha/claims", token: w.agent, body: `{"worker": "` + strings.Repeat("w", 1536*1024) + `"}`}).
			problem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("TitleTooLong", func(t *testing.T) {
		w.post(w.human, items, obj{"title": strings.Repeat("t", 100000)}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "title")
	})
	if n := w.count(`SELECT count(*) FROM items`); n != 0 {
		t.Fatalf("%d items stored by refused requests", n)
	}
	t.Run("OtherRoutes", func(t *testing.T) {
		it := str(t, w.item(w.human, w.p, obj{"title": "ok"}), "id")
		w.send(req{method: http.MethodPost, path: "/v1/projects", token: w.admin, body: `{"name": "p1", "owner": "me"}`}).problemNaming(t, 400, "invalid_argument", "owner")
		w.send(req{method: http.MethodPost, path: "/v1/projects/alpha/tokens", token: w.admin, body: `{"name": "n", "role": "agent", "project": "beta"}`}).problemNaming(t, 400, "invalid_argument", "project")
		w.send(req{method: http.MethodPost, path: "/v1/projects/alpha/items/" + it + "/dependencies", token: w.human, body: `{"depends_on": "` + it + `", "kind": "hard"}`}).problemNaming(t, 400, "invalid_argument", "kind")
		w.send(req{method: http.MethodPost, path: "/v1/projects/alpha/claims", token: w.agent, body: `{"worker": "w", "priority": 3}`}).problemNaming(t, 400, "invalid_argument", "priority")
		w.send(req{method: http.MethodPost, path: "/v1/projects/alpha/claims", token: w.agent, body: `{"worker": 7}`}).problemNaming(t, 400, "invalid_argument", "worker")
		w.send(req{method: http.MethodPatch, path: "/v1/projects/alpha/items/" + it, token: w.human, body: `{"colour": "red"}`}).problemNaming(t, 400, "invalid_argument", "colour")
		w.send(req{method: http.MethodPatch, path: "/v1/projects/alpha/items/" + it, token: w.human, body: `{"id": "` + it + `"}`}).problemNaming(t, 400, "invalid_argument", "id")
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
		lid := str(t, lease, "id")
		w.send(req{method: http.MethodPost, path: "/v1/leases/" + lid + "/heartbeat", token: w.agent, body: `{"epoch": 1, "expires_at": "2100-01-01T00:00:00Z"}`}).problemNaming(t, 400, "invalid_argument", "expires_at")
		w.send(req{method: http.MethodPost, path: "/v1/leases/" + lid + "/complete", token: w.agent, body: `{"epoch": 1, "result": 1, "state": "done"}`}).problemNaming(t, 400, "invalid_argument", "state")
		w.send(req{method: http.MethodPost, path: "/v1/leases/" + lid + "/fail", token: w.agent, body: `{"epoch": 1, "error": {"x": 1}, "outcome": "completed"}`}).problem(t, 400, "invalid_argument")
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, lid); n != 1 {
			t.Fatalf("refused lease calls ended the lease")
		}
		if n := w.count(`SELECT count(*) FROM projects WHERE name = 'p1'`) + w.count(`SELECT count(*) FROM tokens WHERE name = 'n'`) + w.count(`SELECT count(*) FROM dependencies`); n != 0 {
			t.Fatalf("refused requests stored %d rows", n)
		}
	})
	t.Run("UnknownRoutes", func(t *testing.T) {
		w.get(w.admin, "/v1/nothing-here").problem(t, http.StatusNotFound, "not_found")
		r := w.send(req{method: http.MethodPut, path: "/v1/projects/alpha/items", token: w.admin, body: `{}`})
		code, _ := r.json(t)["code"].(string)
		r.problem(t, http.StatusMethodNotAllowed, code)
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	post := func(token, path, key string, body any) resp {
		return w.send(req{method: http.MethodPost, path: path, token: token, body: body, header: map[string]string{"Idempotency-Key": key}})
	}
	t.Run("ItemReplay", func(t *testing.T) {
		body := obj{"title": "once", "priority": 3}
		a := post(w.human, "/v1/projects/alpha/items", "k-item-1", body)
		first := a.expect(t, http.StatusCreated)
		b := post(w.human, "/v1/projects/alpha/items", "k-item-1", body)
		second := b.expect(t, http.StatusCreated)
		if first["id"] != second["id"] {
			t.Fatalf("retry created %v, first %v", second["id"], first["id"])
		}
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'once'`); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("ErrDifferentBody", func(t *testing.T) {
		post(w.human, "/v1/projects/alpha/items", "k-item-2", obj{"title": "two"}).expect(t, http.StatusCreated)
		r := post(w.human, "/v1/projects/alpha/items", "k-item-2", obj{"title": "three"})
		if r.status < 400 || r.status >= 500 {
			t.Fatalf("same key, different body: status %d %s", r.status, r.raw)
		}
		r.problem(t, r.status, r.json(t)["code"].(string))
		if r.status != http.StatusConflict && r.status != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want 409 or 422", r.status)
		}
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'three'`); n != 0 {
			t.Fatalf("stored")
		}
	})
	t.Run("Claim", func(t *testing.T) {
		w.item(w.human, w.p, obj{"title": "c1"})
		w.item(w.human, w.p, obj{"title": "c2"})
		a := post(w.agent, "/v1/projects/alpha/claims", "k-claim", obj{"worker": "w"}).expect(t, http.StatusCreated)
		b := post(w.agent, "/v1/projects/alpha/claims", "k-claim", obj{"worker": "w"}).expect(t, http.StatusCreated)
		if sub(t, a, "lease")["id"] != sub(t, b, "lease")["id"] {
			t.Fatalf("retried claim took a second lease")
		}
		if n := w.count(`SELECT count(*) FROM leases`); n != 1 {
			t.Fatalf("%d leases", n)
		}
		lid := str(t, sub(t, a, "lease"), "id")
		c := post(w.agent, "/v1/leases/"+lid+"/complete", "k-done", obj{"epoch": 1, "result": "r"}).expect(t, http.StatusOK)
		d := post(w.agent, "/v1/leases/"+lid+"/complete", "k-done", obj{"epoch": 1, "result": "r"}).expect(t, http.StatusOK)
		if c["replayed"] == true || d["replayed"] == true {
			t.Fatalf("stored answer replayed differently: %v / %v", c, d)
		}
	})
	t.Run("PerToken", func(t *testing.T) {
		// The same key from another token is another request.
		a := post(w.human, "/v1/projects/alpha/items", "k-shared", obj{"title": "shared"}).expect(t, http.StatusCreated)
		b := post(w.admin, "/v1/projects/alpha/items", "k-shared", obj{"title": "shared"}).expect(t, http.StatusCreated)
		if a["id"] == b["id"] {
			t.Fatalf("another token got the stored answer")
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		answers := make([]resp, 8)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = post(w.human, "/v1/projects/alpha/items", "k-conc", obj{"title": "conc"})
			}()
		}
		wg.Wait()
		var id any
		for _, r := range answers {
			if r.status == http.StatusCreated {
				if got := r.json(t)["id"]; id == nil {
					id = got
				} else if got != id {
					t.Fatalf("two different items for one key")
				}
			} else if r.status != http.StatusConflict {
				t.Fatalf("status %d %s", r.status, r.raw)
			}
		}
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'conc'`); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	// A bucket of 20 requests that refills one request per 1000 s: the
	// 21st request in a row is refused however slowly the machine sends
	// them (with the default 50 per second, a loaded machine that sends
	// fewer never empties its bucket).
	const burst = 20
	w := setupWorld(t, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.001, burst })
	// Another token's budget is its own: the agent is limited, the human not.
	for i := 0; i < burst; i++ {
		w.get(w.agent, "/v1/projects/alpha/items?limit=1").expect(t, http.StatusOK)
	}
	r := w.get(w.agent, "/v1/projects/alpha/items?limit=1")
	r.problem(t, http.StatusTooManyRequests, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	w.get(w.human, "/v1/projects/alpha/items?limit=1").expect(t, http.StatusOK)
}
