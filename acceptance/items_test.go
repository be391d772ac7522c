package acceptance

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

var states = map[string]bool{"ready": true, "leased": true, "blocked": true, "attention": true, "done": true, "cancelled": true}

// checkItem checks that every field of the Item JSON is present with the
// right type.
func checkItem(t *testing.T, it obj) {
	t.Helper()
	for _, k := range []string{"id", "title", "body", "priority", "parent_id", "labels", "state", "epoch",
		"blocked_by", "previous_worker", "result", "created_at", "updated_at"} {
		if _, ok := it[k]; !ok {
			t.Errorf("item has no %q: %v", k, it)
		}
	}
	str(t, it, "id")
	str(t, it, "title")
	str(t, it, "body")
	integer(t, it, "priority")
	integer(t, it, "epoch")
	if v := it["parent_id"]; v != nil {
		str(t, it, "parent_id")
	}
	for _, l := range list(t, it, "labels") {
		if _, ok := l.(string); !ok {
			t.Errorf("label %v is not a string", l)
		}
	}
	if !states[str(t, it, "state")] {
		t.Errorf("state %q", it["state"])
	}
	bb := sub(t, it, "blocked_by")
	for _, k := range []string{"dependencies", "children", "attention"} {
		list(t, bb, k)
	}
	if v := it["previous_worker"]; v != nil {
		str(t, it, "previous_worker")
	}
	timestamp(t, it, "created_at")
	timestamp(t, it, "updated_at")
}

func TestItemCreate(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("Defaults", func(t *testing.T) {
		it := w.item(w.agent, w.p, obj{"title": "plain"})
		checkItem(t, it)
		if it["title"] != "plain" || it["body"] != "" || integer(t, it, "priority") != 0 || it["parent_id"] != nil ||
			len(list(t, it, "labels")) != 0 || it["state"] != "ready" || integer(t, it, "epoch") != 0 ||
			it["previous_worker"] != nil || it["result"] != nil {
			t.Fatalf("defaults: %v", it)
		}
		bb := sub(t, it, "blocked_by")
		for _, k := range []string{"dependencies", "children", "attention"} {
			if len(list(t, bb, k)) != 0 {
				t.Fatalf("blocked_by.%s not empty: %v", k, bb)
			}
		}
		if n := w.count(`SELECT count(*) FROM items i JOIN projects p ON p.id = i.project_id WHERE p.name = 'alpha' AND i.id = $1`, it["id"]); n != 1 {
			t.Fatalf("not stored in alpha")
		}
		// GET answers the same item.
		got := w.getItem(w.agent, w.p, str(t, it, "id"))
		checkItem(t, got)
		if got["id"] != it["id"] || got["title"] != "plain" {
			t.Fatalf("GET %v", got)
		}
	})
	t.Run("AllFields", func(t *testing.T) {
		dep := w.item(w.human, w.p, obj{"title": "dep"})
		parent := w.item(w.human, w.p, obj{"title": "parent"})
		it := w.item(w.human, w.p, obj{
			"title": "full", "body": "# spec\n\ndo it", "priority": 7,
			"parent_id": parent["id"], "depends_on": []any{dep["id"]}, "labels": []string{"go", "db"},
		})
		checkItem(t, it)
		if it["body"] != "# spec\n\ndo it" || integer(t, it, "priority") != 7 || it["parent_id"] != parent["id"] {
			t.Fatalf("item %v", it)
		}
		labels := list(t, it, "labels")
		if len(labels) != 2 || !mentions(labels, "go") || !mentions(labels, "db") {
			t.Fatalf("labels %v", labels)
		}
		if it["state"] != "blocked" {
			t.Fatalf("state %v, want blocked", it["state"])
		}
		if !mentions(sub(t, it, "blocked_by")["dependencies"], str(t, dep, "id")) {
			t.Fatalf("blocked_by.dependencies does not name %v: %v", dep["id"], it["blocked_by"])
		}
		p := w.getItem(w.human, w.p, str(t, parent, "id"))
		if p["state"] != "blocked" || !mentions(sub(t, p, "blocked_by")["children"], str(t, it, "id")) {
			t.Fatalf("parent %v", p)
		}
	})
	t.Run("ErrUnknownParent", func(t *testing.T) {
		w.post(w.human, "/v1/projects/alpha/items", obj{"title": "orphan", "parent_id": "00000000-0000-4000-8000-000000000001"}).
			problem(t, http.StatusNotFound, "not_found")
		w.post(w.human, "/v1/projects/alpha/items", obj{"title": "orphan", "depends_on": []string{"00000000-0000-4000-8000-000000000001"}}).
			problem(t, http.StatusNotFound, "not_found")
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'orphan'`); n != 0 {
			t.Fatalf("stored")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		w.get(w.human, "/v1/projects/alpha/items/00000000-0000-4000-8000-000000000001").problem(t, http.StatusNotFound, "not_found")
		w.get(w.human, "/v1/projects/nope/items").problem(t, http.StatusNotFound, "not_found")
		r := w.get(w.human, "/v1/projects/alpha/items/not-a-uuid")
		if r.status != http.StatusNotFound && r.status != http.StatusBadRequest {
			t.Fatalf("status %d", r.status)
		}
	})
}

// pages follows next_cursor from path and returns every item's id.
func (e *env) pages(t *testing.T, token, path, field string) []string {
	t.Helper()
	var all []string
	cursor := ""
	for i := 0; i < 100; i++ {
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		body := e.get(token, p).expect(t, http.StatusOK)
		all = append(all, ids(t, list(t, body, field))...)
		nc, present := body["next_cursor"]
		if !present {
			t.Fatalf("no next_cursor field: %v", body)
		}
		if nc == nil || nc == "" {
			return all
		}
		cursor = str(t, body, "next_cursor")
	}
	t.Fatalf("more than 100 pages")
	return nil
}

func TestItemList(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	parent := w.item(w.human, w.p, obj{"title": "parent"})
	pID := str(t, parent, "id")
	var children []string
	for i := 0; i < 3; i++ {
		c := w.item(w.human, w.p, obj{"title": "child", "parent_id": pID, "labels": []string{"kid"}})
		children = append(children, str(t, c, "id"))
	}
	gpu := w.item(w.human, w.p, obj{"title": "gpu", "labels": []string{"gpu", "kid"}})
	w.item(w.qHuman, w.q, obj{"title": "other project"})

	t.Run("All", func(t *testing.T) {
		all := w.pages(t, w.human, "/v1/projects/alpha/items", "items")
		if len(all) != 5 {
			t.Fatalf("%d items, want 5", len(all))
		}
	})
	t.Run("Paginated", func(t *testing.T) {
		first := w.get(w.human, "/v1/projects/alpha/items?limit=2").expect(t, http.StatusOK)
		if len(list(t, first, "items")) != 2 {
			t.Fatalf("limit=2 gave %d items", len(list(t, first, "items")))
		}
		if nc, _ := first["next_cursor"].(string); nc == "" {
			t.Fatalf("no next_cursor on a full page: %v", first["next_cursor"])
		}
		if n := len(list(t, w.get(w.human, "/v1/projects/alpha/items?page_size=3").expect(t, http.StatusOK), "items")); n != 3 {
			t.Fatalf("page_size=3 gave %d items", n)
		}
		all := w.pages(t, w.human, "/v1/projects/alpha/items?limit=2", "items")
		seen := map[string]bool{}
		for _, id := range all {
			if seen[id] {
				t.Fatalf("item %s on two pages", id)
			}
			seen[id] = true
		}
		if len(all) != 5 {
			t.Fatalf("%d items over pages, want 5", len(all))
		}
	})
	t.Run("ByState", func(t *testing.T) {
		blocked := w.pages(t, w.human, "/v1/projects/alpha/items?state=blocked", "items")
		if len(blocked) != 1 || blocked[0] != pID {
			t.Fatalf("blocked %v", blocked)
		}
		ready := w.pages(t, w.human, "/v1/projects/alpha/items?state=ready", "items")
		if len(ready) != 4 {
			t.Fatalf("ready %v", ready)
		}
	})
	t.Run("ByLabel", func(t *testing.T) {
		got := w.pages(t, w.human, "/v1/projects/alpha/items?label=gpu", "items")
		if len(got) != 1 || got[0] != gpu["id"] {
			t.Fatalf("label=gpu %v", got)
		}
		if got := w.pages(t, w.human, "/v1/projects/alpha/items?label=kid", "items"); len(got) != 4 {
			t.Fatalf("label=kid %v", got)
		}
	})
	t.Run("ByParent", func(t *testing.T) {
		got := w.pages(t, w.human, "/v1/projects/alpha/items?parent_id="+pID, "items")
		if strings.Join(got, ",") != strings.Join(children, ",") {
			t.Fatalf("parent_id: %v, want %v", got, children)
		}
	})
	t.Run("Combined", func(t *testing.T) {
		got := w.pages(t, w.human, "/v1/projects/alpha/items?state=ready&label=kid&parent_id="+pID+"&limit=1", "items")
		if len(got) != 3 {
			t.Fatalf("combined %v", got)
		}
	})
	t.Run("ErrBadParams", func(t *testing.T) {
		w.get(w.human, "/v1/projects/alpha/items?limit=1000000").problemNaming(t, http.StatusBadRequest, "invalid_argument", "limit")
		w.get(w.human, "/v1/projects/alpha/items?page_size=100000").problemNaming(t, http.StatusBadRequest, "invalid_argument", "page_size")
		w.get(w.human, "/v1/projects/alpha/items?limit=-1").problemNaming(t, http.StatusBadRequest, "invalid_argument", "limit")
		w.get(w.human, "/v1/projects/alpha/items?limit=abc").problemNaming(t, http.StatusBadRequest, "invalid_argument", "limit")
		w.get(w.human, "/v1/projects/alpha/items?state=sleeping").problemNaming(t, http.StatusBadRequest, "invalid_argument", "state")
		w.get(w.human, "/v1/projects/alpha/items?cursor=garbage").problemNaming(t, http.StatusBadRequest, "invalid_argument", "cursor")
		w.get(w.human, "/v1/projects/alpha/items?parent_id=xyz").problemNaming(t, http.StatusBadRequest, "invalid_argument", "parent_id")
	})
}

func TestItemPatch(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	it := w.item(w.human, w.p, obj{"title": "old", "body": "b", "labels": []string{"x"}})
	id := str(t, it, "id")
	path := "/v1/projects/alpha/items/" + id

	t.Run("OK", func(t *testing.T) {
		got := w.patch(w.human, path, obj{"title": "new", "priority": 4, "labels": []string{"y", "z"}, "body": "nb"}).expect(t, http.StatusOK)
		checkItem(t, got)
		if got["title"] != "new" || integer(t, got, "priority") != 4 || got["body"] != "nb" || len(list(t, got, "labels")) != 2 {
			t.Fatalf("patched %v", got)
		}
		if !timestamp(t, got, "updated_at").After(timestamp(t, it, "created_at").Add(-time.Millisecond)) {
			t.Fatalf("updated_at not moved")
		}
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND title = 'new' AND priority = 4 AND body = 'nb' AND labels = '{y,z}'`, id); n != 1 {
			t.Fatalf("not stored")
		}
	})
	t.Run("PartialKeepsOthers", func(t *testing.T) {
		got := w.patch(w.human, path, obj{"priority": 9}).expect(t, http.StatusOK)
		if got["title"] != "new" || got["body"] != "nb" || integer(t, got, "priority") != 9 {
			t.Fatalf("patched %v", got)
		}
	})
	t.Run("OptimisticConcurrency", func(t *testing.T) {
		r := w.get(w.human, path)
		etag := r.header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET item has no ETag")
		}
		ok := w.send(req{method: http.MethodPatch, path: path, token: w.human, body: obj{"title": "first"}, header: map[string]string{"If-Match": etag}})
		ok.expect(t, http.StatusOK)
		if ok.header.Get("ETag") == "" || ok.header.Get("ETag") == etag {
			t.Fatalf("PATCH answered ETag %q (was %q)", ok.header.Get("ETag"), etag)
		}
		stale := w.send(req{method: http.MethodPatch, path: path, token: w.human, body: obj{"title": "second"}, header: map[string]string{"If-Match": etag}})
		if stale.status != http.StatusPreconditionFailed && stale.status != http.StatusConflict {
			t.Fatalf("stale If-Match: status %d: %s", stale.status, stale.raw)
		}
		stale.problem(t, stale.status, "conflict")
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND title = 'first'`, id); n != 1 {
			t.Fatalf("stale edit applied")
		}
	})
	t.Run("NeverPreemptsLease", func(t *testing.T) {
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
		w.patch(w.human, "/v1/projects/alpha/items/"+str(t, lease, "item_id"), obj{"priority": 1}).expect(t, http.StatusOK)
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, lease["id"]); n != 1 {
			t.Fatalf("edit ended the lease")
		}
		w.leaseCall(w.agent, str(t, lease, "id"), "heartbeat", obj{"epoch": integer(t, lease, "epoch")}).expect(t, http.StatusOK)
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		w.patch(w.human, path, obj{"title": ""}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "title")
		w.patch(w.human, path, obj{"state": "done"}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "state")
		w.patch(w.human, path, obj{"epoch": 5}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "epoch")
		w.patch(w.human, path, obj{"priority": "high"}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "priority")
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND title = 'first' AND epoch <= 1 AND status = 'open'`, id); n != 1 {
			t.Fatalf("refused edit applied")
		}
	})
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	a := str(t, w.item(w.human, w.p, obj{"title": "A"}), "id")
	b := str(t, w.item(w.human, w.p, obj{"title": "B"}), "id")
	c := str(t, w.item(w.human, w.p, obj{"title": "C"}), "id")
	deps := func(id string) string { return "/v1/projects/alpha/items/" + id + "/dependencies" }

	t.Run("OK", func(t *testing.T) {
		w.post(w.human, deps(b), obj{"depends_on": a}).expect(t, http.StatusCreated)
		got := w.getItem(w.human, w.p, b)
		if got["state"] != "blocked" || !mentions(sub(t, got, "blocked_by")["dependencies"], a) {
			t.Fatalf("B %v", got)
		}
		w.post(w.human, deps(c), obj{"depends_on": b}).expect(t, http.StatusCreated)
	})
	t.Run("ErrCycle", func(t *testing.T) {
		p := w.post(w.human, deps(a), obj{"depends_on": c}).problem(t, http.StatusConflict, "dependency_cycle")
		for _, id := range []string{a, b, c} {
			if !mentions(p, id) {
				t.Errorf("problem does not name %s of the cycle: %v", id, p)
			}
		}
		if d, _ := p["detail"].(string); !(strings.Contains(d, a) || strings.Contains(d, "A")) {
			t.Errorf("detail %q does not name the cycle", d)
		}
		if n := w.count(`SELECT count(*) FROM dependencies WHERE item_id = $1`, a); n != 0 {
			t.Fatalf("cyclic edge stored")
		}
		w.post(w.human, deps(a), obj{"depends_on": a}).problem(t, http.StatusConflict, "dependency_cycle")
	})
	t.Run("ErrCycleThroughParent", func(t *testing.T) {
		parent := str(t, w.item(w.human, w.p, obj{"title": "P"}), "id")
		child := str(t, w.item(w.human, w.p, obj{"title": "K", "parent_id": parent}), "id")
		w.post(w.human, deps(child), obj{"depends_on": parent}).problem(t, http.StatusConflict, "dependency_cycle")
		if n := w.count(`SELECT count(*) FROM dependencies WHERE item_id = $1`, child); n != 0 {
			t.Fatalf("cyclic edge stored")
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		w.post(w.human, deps(a), obj{"depends_on": "00000000-0000-4000-8000-000000000001"}).problem(t, http.StatusNotFound, "not_found")
		w.post(w.human, deps(a), obj{}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "depends_on")
		w.post(w.human, deps(a), obj{"depends_on": 5}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "depends_on")
	})
	t.Run("DeleteRecomputes", func(t *testing.T) {
		w.del(w.human, deps(c)+"/"+b).expect(t, http.StatusOK, http.StatusNoContent)
		got := w.getItem(w.human, w.p, c)
		if got["state"] != "ready" || len(list(t, sub(t, got, "blocked_by"), "dependencies")) != 0 {
			t.Fatalf("C after delete %v", got)
		}
		if n := w.count(`SELECT count(*) FROM dependencies WHERE item_id = $1`, c); n != 0 {
			t.Fatalf("edge still stored")
		}
		// C is claimable now.
		lease, item := w.claim(w.agent, w.p, obj{"worker": "w"})
		if item["id"] != a && item["id"] != c {
			t.Fatalf("claimed %v", item["id"])
		}
		_ = lease
		w.del(w.human, deps(c)+"/"+b).problem(t, http.StatusNotFound, "not_found")
	})
}

func TestCancel(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("Ready", func(t *testing.T) {
		id := str(t, w.item(w.human, w.p, obj{"title": "x"}), "id")
		got := w.post(w.human, "/v1/projects/alpha/items/"+id+"/cancel", nil).expect(t, http.StatusOK)
		if got["state"] != "cancelled" {
			t.Fatalf("state %v", got["state"])
		}
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND status = 'cancelled'`, id); n != 1 {
			t.Fatalf("not stored")
		}
		if r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w"}); r.status != http.StatusNoContent {
			t.Fatalf("claim after cancel: %d %s", r.status, r.raw)
		}
	})
	t.Run("Leased", func(t *testing.T) {
		id := str(t, w.item(w.human, w.p, obj{"title": "y"}), "id")
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
		w.post(w.human, "/v1/projects/alpha/items/"+id+"/cancel", obj{}).expect(t, http.StatusOK)
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'cancelled' AND ended_at IS NOT NULL`, lease["id"]); n != 1 {
			t.Fatalf("lease not ended cancelled")
		}
		w.leaseCall(w.agent, str(t, lease, "id"), "heartbeat", obj{"epoch": integer(t, lease, "epoch")}).problem(t, http.StatusConflict, "lease_lost")
		w.leaseCall(w.agent, str(t, lease, "id"), "complete", obj{"epoch": integer(t, lease, "epoch"), "result": 1}).problem(t, http.StatusConflict, "lease_lost")
		if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND status = 'cancelled' AND result IS NULL`, id); n != 1 {
			t.Fatalf("item changed after cancel")
		}
		hist := w.get(w.human, "/v1/projects/alpha/items/"+id+"/leases").expect(t, http.StatusOK)
		ls := list(t, hist, "leases")
		if len(ls) != 1 || ls[0].(obj)["outcome"] != "cancelled" {
			t.Fatalf("history %v", ls)
		}
	})
}
