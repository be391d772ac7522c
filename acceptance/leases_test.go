package acceptance

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/server"
)

// checkLease checks every field of the Lease JSON.
func checkLease(t *testing.T, l obj) {
	t.Helper()
	for _, k := range []string{"id", "item_id", "worker", "epoch", "acquired_at", "expires_at", "ended_at", "outcome", "outcome_detail"} {
		if _, ok := l[k]; !ok {
			t.Errorf("lease has no %q: %v", k, l)
		}
	}
	str(t, l, "id")
	str(t, l, "item_id")
	str(t, l, "worker")
	if integer(t, l, "epoch") < 1 {
		t.Errorf("epoch %v", l["epoch"])
	}
	acq := timestamp(t, l, "acquired_at")
	if !timestamp(t, l, "expires_at").After(acq) {
		t.Errorf("expires_at not after acquired_at")
	}
	if l["ended_at"] != nil {
		timestamp(t, l, "ended_at")
		str(t, l, "outcome")
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("NothingReady", func(t *testing.T) {
		r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w"})
		if r.status != http.StatusNoContent || len(r.raw) != 0 {
			t.Fatalf("status %d body %q", r.status, r.raw)
		}
	})
	low := w.item(w.human, w.p, obj{"title": "low", "priority": 1})
	high1 := w.item(w.human, w.p, obj{"title": "high1", "priority": 5})
	high2 := w.item(w.human, w.p, obj{"title": "high2", "priority": 5})
	t.Run("OK", func(t *testing.T) {
		lease, item := w.claim(w.agent, w.p, obj{"worker": "w1"})
		checkLease(t, lease)
		checkItem(t, item)
		if item["id"] != high1["id"] || lease["item_id"] != high1["id"] {
			t.Fatalf("claimed %v, want highest priority first-created %v", item["id"], high1["id"])
		}
		if lease["worker"] != "w1" || integer(t, lease, "epoch") != 1 || integer(t, item, "epoch") != 1 ||
			item["state"] != "leased" || lease["ended_at"] != nil || lease["outcome"] != nil {
			t.Fatalf("lease %v item %v", lease, item)
		}
		ttl := timestamp(t, lease, "expires_at").Sub(timestamp(t, lease, "acquired_at"))
		if ttl < 14*time.Minute || ttl > 16*time.Minute {
			t.Fatalf("default TTL %v, want 15m", ttl)
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND item_id = $2 AND epoch = 1 AND ended_at IS NULL`, lease["id"], high1["id"]); n != 1 {
			t.Fatalf("lease not stored")
		}
	})
	t.Run("Order", func(t *testing.T) {
		_, item := w.claim(w.agent, w.p, obj{"worker": "w2", "lease_seconds": 60})
		if item["id"] != high2["id"] {
			t.Fatalf("second claim got %v", item["title"])
		}
		lease, item := w.claim(w.agent, w.p, obj{"worker": "w3", "lease_seconds": 60})
		if item["id"] != low["id"] {
			t.Fatalf("third claim got %v", item["title"])
		}
		ttl := timestamp(t, lease, "expires_at").Sub(timestamp(t, lease, "acquired_at"))
		if ttl < 59*time.Second || ttl > 61*time.Second {
			t.Fatalf("lease_seconds 60 gave %v", ttl)
		}
	})
	t.Run("Labels", func(t *testing.T) {
		gpu := w.item(w.human, w.p, obj{"title": "gpu", "labels": []string{"gpu", "big"}})
		if r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "labels": []string{"cpu"}}); r.status != http.StatusNoContent {
			t.Fatalf("labels=cpu: %d %s", r.status, r.raw)
		}
		if r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "labels": []string{"gpu", "cpu"}}); r.status != http.StatusNoContent {
			t.Fatalf("labels=gpu,cpu: %d %s", r.status, r.raw)
		}
		_, item := w.claim(w.agent, w.p, obj{"worker": "w", "labels": []string{"gpu"}})
		if item["id"] != gpu["id"] {
			t.Fatalf("claimed %v", item["id"])
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		w.item(w.human, w.p, obj{"title": "spare"})
		w.post(w.agent, "/v1/projects/alpha/claims", obj{}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "worker")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": ""}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "worker")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "lease_seconds": 0}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "lease_seconds")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "lease_seconds": 100 * 24 * 3600}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "lease_seconds")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "wait_seconds": -1}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "wait_seconds")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "wait_seconds": "soon"}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "wait_seconds")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "epoch": 3}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "epoch")
		w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "item_id": low["id"]}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "item_id")
		if n := w.count(`SELECT count(*) FROM items WHERE title = 'spare' AND epoch = 0 AND active_lease_id IS NULL`); n != 1 {
			t.Fatalf("refused claim leased the item")
		}
	})
}

func TestClaimLongPoll(t *testing.T) {
	t.Parallel()
	// A waiting claim's periodic recheck would come only after an hour: a
	// claim answered with a lease within its 30 s wait was woken by the
	// write that made the item ready, however slow the machine.
	w := setupWorld(t, func(c *server.Config) { c.Lease.WaitRecheck = time.Hour })
	t.Run("TimesOut", func(t *testing.T) {
		start := time.Now()
		r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w", "wait_seconds": 1})
		if r.status != http.StatusNoContent {
			t.Fatalf("status %d %s", r.status, r.raw)
		}
		if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
			t.Fatalf("answered after %v, want about 1s", d)
		}
	})
	t.Run("WokenByNewItem", func(t *testing.T) {
		done := make(chan resp, 1)
		go func() {
			done <- w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "poller", "wait_seconds": 30})
		}()
		// Let the claim start waiting; the item arrives while it waits.
		select {
		case r := <-done:
			t.Fatalf("claim answered before any item existed: %d %s", r.status, r.raw)
		case <-time.After(500 * time.Millisecond):
		}
		it := w.item(w.human, w.p, obj{"title": "late"})
		r := <-done
		if r.status == http.StatusNoContent {
			t.Fatal("the waiting claim was not woken by the new item within its 30 s")
		}
		if r.status != http.StatusCreated {
			t.Fatalf("status %d %s", r.status, r.raw)
		}
		if sub(t, r.json(t), "item")["id"] != it["id"] {
			t.Fatalf("claimed another item")
		}
	})
	t.Run("WokenByDependencyDone", func(t *testing.T) {
		a := w.item(w.human, w.p, obj{"title": "first"})
		b := w.item(w.human, w.p, obj{"title": "second", "depends_on": []any{a["id"]}})
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "x"})
		done := make(chan resp, 1)
		go func() {
			done <- w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "poller", "wait_seconds": 30})
		}()
		select {
		case r := <-done:
			t.Fatalf("claim answered early: %d %s", r.status, r.raw)
		case <-time.After(500 * time.Millisecond):
		}
		w.leaseCall(w.agent, str(t, lease, "id"), "complete", obj{"epoch": integer(t, lease, "epoch"), "result": nil}).expect(t, http.StatusOK)
		r := <-done
		if r.status == http.StatusNoContent {
			t.Fatal("the waiting claim was not woken by the completion within its 30 s")
		}
		if r.status != http.StatusCreated {
			t.Fatalf("status %d %s", r.status, r.raw)
		}
		if sub(t, r.json(t), "item")["id"] != b["id"] {
			t.Fatalf("claimed another item")
		}
	})
}

// epochBodies are the invalid epochs every worker mutation refuses.
var epochBodies = map[string]string{
	"Missing":  `{}`,
	"String":   `{"epoch": "1"}`,
	"Float":    `{"epoch": 1.5}`,
	"Negative": `{"epoch": -1}`,
	"Zero":     `{"epoch": 0}`,
	"Null":     `{"epoch": null}`,
}

func TestLeaseEpochRequired(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	w.item(w.human, w.p, obj{"title": "x"})
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w", "lease_seconds": 300})
	lid := str(t, lease, "id")
	var before time.Time
	w.db.QueryRow(t.Context(), `SELECT expires_at FROM leases WHERE id = $1`, lid).Scan(&before)
	for _, op := range []string{"heartbeat", "complete", "release", "fail", "decompose", "attention"} {
		for name, body := range epochBodies {
			t.Run(op+"/"+name, func(t *testing.T) {
				w.send(req{method: http.MethodPost, path: "/v1/leases/" + lid + "/" + op, token: w.agent, body: body}).
					problemNaming(t, http.StatusBadRequest, "invalid_argument", "epoch")
			})
		}
	}
	var after time.Time
	var ended *time.Time
	w.db.QueryRow(t.Context(), `SELECT expires_at, ended_at FROM leases WHERE id = $1`, lid).Scan(&after, &ended)
	if ended != nil || !after.Equal(before) {
		t.Fatalf("refused calls changed the lease: ended %v, expires %v -> %v", ended, before, after)
	}
	if n := w.count(`SELECT count(*) FROM attention_requests`) + w.count(`SELECT count(*) FROM items WHERE parent_id IS NOT NULL`); n != 0 {
		t.Fatalf("refused calls stored %d rows", n)
	}
}

func TestLeaseStale(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	it := w.item(w.human, w.p, obj{"title": "x"})
	old, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
	w.leaseCall(w.agent, str(t, old, "id"), "release", obj{"epoch": 1}).expect(t, http.StatusOK)
	// The same worker label claims again: a new lease, a higher epoch.
	cur, item := w.claim(w.agent, w.p, obj{"worker": "w"})
	if integer(t, cur, "epoch") != 2 || integer(t, item, "epoch") != 2 || cur["id"] == old["id"] {
		t.Fatalf("re-claim lease %v", cur)
	}
	var expBefore time.Time
	w.db.QueryRow(t.Context(), `SELECT expires_at FROM leases WHERE id = $1`, cur["id"]).Scan(&expBefore)
	calls := map[string]obj{
		"heartbeat": {"progress": obj{"pct": 50}},
		"complete":  {"result": obj{"stale": true}},
		"release":   {},
		"fail":      {"error": "stale"},
		"decompose": {"children": []obj{{"key": "a", "title": "A"}}},
		"attention": {"question": "stale?"},
	}
	for op, body := range calls {
		t.Run(op, func(t *testing.T) {
			for _, target := range []struct {
				lease string
				epoch int64
			}{{str(t, old, "id"), 1}, {str(t, cur, "id"), 1}, {str(t, cur, "id"), 3}} {
				b := obj{"epoch": target.epoch}
				for k, v := range body {
					b[k] = v
				}
				w.leaseCall(w.agent, target.lease, op, b).problem(t, http.StatusConflict, "lease_lost")
			}
		})
	}
	var expAfter time.Time
	w.db.QueryRow(t.Context(), `SELECT expires_at FROM leases WHERE id = $1`, cur["id"]).Scan(&expAfter)
	if !expAfter.Equal(expBefore) {
		t.Fatalf("stale heartbeat extended the current lease")
	}
	if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND status = 'open' AND result IS NULL AND epoch = 2 AND active_lease_id = $2`, it["id"], cur["id"]); n != 1 {
		t.Fatalf("stale calls changed the item")
	}
	if n := w.count(`SELECT count(*) FROM attention_requests`) + w.count(`SELECT count(*) FROM items WHERE parent_id IS NOT NULL`); n != 0 {
		t.Fatalf("stale calls stored rows")
	}
	if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'released'`, old["id"]); n != 1 {
		t.Fatalf("old lease's outcome changed")
	}
	// The current holder still works.
	w.leaseCall(w.agent, str(t, cur, "id"), "complete", obj{"epoch": 2, "result": "real"}).expect(t, http.StatusOK)
	if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND status = 'done' AND result = '"real"'`, it["id"]); n != 1 {
		t.Fatalf("real completion not stored")
	}
}

func TestLeaseMutations(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("Heartbeat", func(t *testing.T) {
		w.item(w.human, w.p, obj{"title": "hb"})
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w", "lease_seconds": 30})
		lid := str(t, lease, "id")
		out := w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": integer(t, lease, "epoch"), "progress": obj{"pct": 10}}).expect(t, http.StatusOK)
		var exp string
		if s, ok := out["expires_at"].(string); ok {
			exp = s
		} else {
			exp = str(t, sub(t, out, "lease"), "expires_at")
		}
		e, err := time.Parse(time.RFC3339Nano, exp)
		if err != nil || e.Before(timestamp(t, lease, "expires_at")) {
			t.Fatalf("new expiry %v not after %v", exp, lease["expires_at"])
		}
		w.leaseCall(w.agent, lid, "release", obj{"epoch": integer(t, lease, "epoch")}).expect(t, http.StatusOK)
	})
	t.Run("Complete", func(t *testing.T) {
		parent := w.item(w.human, w.p, obj{"title": "parent", "priority": 10})
		a := w.item(w.human, w.p, obj{"title": "a", "parent_id": parent["id"], "priority": 10})
		b := w.item(w.human, w.p, obj{"title": "b", "depends_on": []any{a["id"]}, "priority": 10})
		lease, item := w.claim(w.agent, w.p, obj{"worker": "w"})
		if item["id"] != a["id"] {
			t.Fatalf("claimed %v", item["title"])
		}
		lid := str(t, lease, "id")
		result := obj{"files": []any{"x.go"}, "n": 3}
		out := w.leaseCall(w.agent, lid, "complete", obj{"epoch": 1, "result": result}).expect(t, http.StatusOK)
		if out["replayed"] == true {
			t.Fatalf("first completion marked replayed")
		}
		got := w.getItem(w.human, w.p, str(t, a, "id"))
		if got["state"] != "done" || !mentions(got["result"], "x.go") {
			t.Fatalf("item %v", got)
		}
		if w.getItem(w.human, w.p, str(t, b, "id"))["state"] != "ready" {
			t.Fatalf("dependent not ready")
		}
		if p := w.getItem(w.human, w.p, str(t, parent, "id")); p["state"] != "ready" {
			t.Fatalf("parent %v, want ready (not done)", p["state"])
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'completed' AND ended_at IS NOT NULL`, lid); n != 1 {
			t.Fatalf("lease not completed")
		}
		t.Run("Replayed", func(t *testing.T) {
			out := w.leaseCall(w.agent, lid, "complete", obj{"epoch": 1, "result": obj{"n": 3, "files": []any{"x.go"}}}).expect(t, http.StatusOK)
			if out["replayed"] != true {
				t.Fatalf("repeat not replayed: %v", out)
			}
		})
		t.Run("ErrConflictingResult", func(t *testing.T) {
			w.leaseCall(w.agent, lid, "complete", obj{"epoch": 1, "result": obj{"n": 4}}).problem(t, http.StatusConflict, "conflicting_result")
			var res json.RawMessage
			w.db.QueryRow(t.Context(), `SELECT result FROM items WHERE id = $1`, a["id"]).Scan(&res)
			if !mentions(string(res), "x.go") {
				t.Fatalf("result changed to %s", res)
			}
			if n := w.count(`SELECT count(*) FROM leases WHERE item_id = $1`, a["id"]); n != 1 {
				t.Fatalf("%d leases", n)
			}
		})
		t.Run("ErrAfterEnd", func(t *testing.T) {
			w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": 1}).problem(t, http.StatusConflict, "lease_lost")
			w.leaseCall(w.agent, lid, "release", obj{"epoch": 1}).problem(t, http.StatusConflict, "lease_lost")
		})
	})
	t.Run("Release", func(t *testing.T) {
		it := w.item(w.human, w.p, obj{"title": "rel", "priority": 20})
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "releaser"})
		w.leaseCall(w.agent, str(t, lease, "id"), "release", obj{"epoch": integer(t, lease, "epoch")}).expect(t, http.StatusOK)
		got := w.getItem(w.human, w.p, str(t, it, "id"))
		if got["state"] != "ready" || got["previous_worker"] != "releaser" {
			t.Fatalf("item %v", got)
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'released'`, lease["id"]); n != 1 {
			t.Fatalf("lease not released")
		}
		l2, _ := w.claim(w.agent, w.p, obj{"worker": "other"})
		if l2["item_id"] != it["id"] || integer(t, l2, "epoch") != 2 {
			t.Fatalf("re-claim %v", l2)
		}
		w.leaseCall(w.agent, str(t, l2, "id"), "complete", obj{"epoch": 2, "result": nil}).expect(t, http.StatusOK)
	})
	t.Run("Fail", func(t *testing.T) {
		it := w.item(w.human, w.p, obj{"title": "failing", "priority": 30})
		lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
		w.leaseCall(w.agent, str(t, lease, "id"), "fail", obj{"epoch": integer(t, lease, "epoch"), "error": "compiler exploded"}).expect(t, http.StatusOK)
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'failed'`, lease["id"]); n != 1 {
			t.Fatalf("lease not failed")
		}
		got := w.getItem(w.human, w.p, str(t, it, "id"))
		if got["state"] != "blocked" && got["state"] != "ready" {
			t.Fatalf("failed item state %v", got["state"])
		}
		hist := w.get(w.human, "/v1/projects/alpha/items/"+str(t, it, "id")+"/leases").expect(t, http.StatusOK)
		if !mentions(hist, "compiler exploded") {
			t.Fatalf("the failure's error is not in the history: %v", hist)
		}
		// The error is optional, and may be an object.
		for i, body := range []obj{{"epoch": 0}, {"error": obj{"message": "linker exploded", "exit": 2}}} {
			w.item(w.human, w.p, obj{"title": "failing again", "priority": 40})
			l, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
			body["epoch"] = integer(t, l, "epoch")
			w.leaseCall(w.agent, str(t, l, "id"), "fail", body).expect(t, http.StatusOK)
			if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'failed'`, l["id"]); n != 1 {
				t.Fatalf("fail %d: lease not failed", i)
			}
		}
		if !mentions(w.get(w.human, "/v1/projects/alpha/leases?outcome=failed").expect(t, http.StatusOK), "linker exploded") {
			t.Fatalf("an object error is not kept")
		}
	})
}

func TestDecompose(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	parent := w.item(w.human, w.p, obj{"title": "epic"})
	pID := str(t, parent, "id")
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
	lid := str(t, lease, "id")
	t.Run("ErrUnknownKey", func(t *testing.T) {
		w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{
			{"key": "a", "title": "A"}, {"key": "b", "title": "B", "depends_on_keys": []string{"zzz"}},
		}}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "zzz")
		w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{}}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "children")
		w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{{"key": "a", "title": ""}}}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "title")
		w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{{"key": "a", "title": "A"}, {"key": "a", "title": "A2"}}}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "key")
		w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{{"key": "a", "title": "A", "depends_on_keys": []string{"a"}}}}).
			problem(t, http.StatusConflict, "dependency_cycle")
		p := w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{
			{"key": "a", "title": "A", "depends_on_keys": []string{"b"}}, {"key": "b", "title": "B", "depends_on_keys": []string{"a"}},
		}}).problem(t, http.StatusConflict, "dependency_cycle")
		if d, _ := p["detail"].(string); !strings.Contains(d, "a") || !strings.Contains(d, "b") {
			t.Errorf("detail %q does not name the cycle", d)
		}
		if n := w.count(`SELECT count(*) FROM items WHERE parent_id IS NOT NULL`); n != 0 {
			t.Fatalf("refused decompose stored children")
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, lid); n != 1 {
			t.Fatalf("refused decompose ended the lease")
		}
	})
	t.Run("OK", func(t *testing.T) {
		out := w.leaseCall(w.agent, lid, "decompose", obj{"epoch": 1, "children": []obj{
			{"key": "a", "title": "A", "body": "first"},
			{"key": "b", "title": "B", "depends_on_keys": []string{"a"}},
			{"key": "c", "title": "C", "depends_on_keys": []string{"a", "b"}},
		}}).expect(t, http.StatusOK, http.StatusCreated)
		if !mentions(out, "B") {
			t.Fatalf("answer does not show the children: %v", out)
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'decomposed'`, lid); n != 1 {
			t.Fatalf("lease not decomposed")
		}
		if n := w.count(`SELECT count(*) FROM items WHERE parent_id = $1`, pID); n != 3 {
			t.Fatalf("%d children", n)
		}
		if n := w.count(`SELECT count(*) FROM dependencies`); n != 3 {
			t.Fatalf("%d dependencies, want 3", n)
		}
		p := w.getItem(w.human, w.p, pID)
		if p["state"] != "blocked" || len(list(t, sub(t, p, "blocked_by"), "children")) != 3 {
			t.Fatalf("parent %v", p)
		}
	})
	t.Run("ChildrenThenParent", func(t *testing.T) {
		for _, want := range []string{"A", "B", "C"} {
			l, it := w.claim(w.agent, w.p, obj{"worker": "w"})
			if it["title"] != want || it["parent_id"] != pID {
				t.Fatalf("claimed %v, want %s", it["title"], want)
			}
			w.leaseCall(w.agent, str(t, l, "id"), "complete", obj{"epoch": integer(t, l, "epoch"), "result": want}).expect(t, http.StatusOK)
		}
		p := w.getItem(w.human, w.p, pID)
		if p["state"] != "ready" {
			t.Fatalf("parent %v after its children, want ready", p["state"])
		}
		l, it := w.claim(w.agent, w.p, obj{"worker": "w"})
		if it["id"] != pID || integer(t, l, "epoch") != 2 {
			t.Fatalf("claimed %v epoch %v", it["id"], l["epoch"])
		}
		w.leaseCall(w.agent, str(t, l, "id"), "complete", obj{"epoch": 2, "result": "all"}).expect(t, http.StatusOK)
		if w.getItem(w.human, w.p, pID)["state"] != "done" {
			t.Fatalf("parent not done")
		}
	})
}

func TestLeaseHistory(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	x := str(t, w.item(w.human, w.p, obj{"title": "x", "priority": 2}), "id")
	y := str(t, w.item(w.human, w.p, obj{"title": "y", "priority": 1}), "id")
	// x: w1 releases; y: w2 completes; x: w1 completes.
	l1, _ := w.claim(w.agent, w.p, obj{"worker": "w1"})
	w.leaseCall(w.agent, str(t, l1, "id"), "release", obj{"epoch": 1}).expect(t, http.StatusOK)
	l2, _ := w.claim(w.agent, w.p, obj{"worker": "w2", "labels": []string{}})
	if l2["item_id"] != x {
		t.Fatalf("claim order")
	}
	l3, _ := w.claim(w.agent, w.p, obj{"worker": "w1"})
	w.leaseCall(w.agent, str(t, l2, "id"), "complete", obj{"epoch": 2, "result": 1}).expect(t, http.StatusOK)
	w.leaseCall(w.agent, str(t, l3, "id"), "complete", obj{"epoch": 1, "result": 2}).expect(t, http.StatusOK)
	all := []string{str(t, l1, "id"), str(t, l2, "id"), str(t, l3, "id")}
	base := "/v1/projects/alpha/leases"

	check := func(t *testing.T, path string, want ...string) {
		t.Helper()
		got := w.pages(t, w.human, path, "leases")
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", path, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v (oldest first)", path, got, want)
			}
		}
	}
	t.Run("All", func(t *testing.T) {
		body := w.get(w.human, base).expect(t, http.StatusOK)
		for _, l := range list(t, body, "leases") {
			checkLease(t, l.(obj))
		}
		check(t, base, all...)
	})
	t.Run("Paginated", func(t *testing.T) {
		first := w.get(w.human, base+"?limit=1").expect(t, http.StatusOK)
		if len(list(t, first, "leases")) != 1 || first["next_cursor"] == nil {
			t.Fatalf("limit=1: %v", first)
		}
		check(t, base+"?limit=1", all...)
	})
	t.Run("ByItem", func(t *testing.T) {
		check(t, base+"?item_id="+x, all[0], all[1])
		check(t, "/v1/projects/alpha/items/"+x+"/leases", all[0], all[1])
		check(t, "/v1/projects/alpha/items/"+y+"/leases", all[2])
	})
	t.Run("ByWorker", func(t *testing.T) {
		check(t, base+"?worker=w1", all[0], all[2])
	})
	t.Run("ByOutcome", func(t *testing.T) {
		check(t, base+"?outcome=completed", all[1], all[2])
		check(t, base+"?outcome=released", all[0])
		check(t, base+"?outcome=expired")
	})
	t.Run("ByTime", func(t *testing.T) {
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		check(t, base+"?since="+past, all...)
		check(t, base+"?since="+future)
		check(t, base+"?until="+past)
		check(t, base+"?until="+future+"&since="+past+"&worker=w2", all[1])
		// An offset, escaped or not (an unescaped "+" arrives as a space).
		offset := time.Now().Add(-time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339)
		check(t, base+"?since="+url.QueryEscape(offset), all...)
		check(t, base+"?since="+offset, all...)
	})
	t.Run("ErrBadParams", func(t *testing.T) {
		w.get(w.human, base+"?outcome=exploded").problemNaming(t, http.StatusBadRequest, "invalid_argument", "outcome")
		w.get(w.human, base+"?since=yesterday").problemNaming(t, http.StatusBadRequest, "invalid_argument", "since")
		w.get(w.human, base+"?item_id=nope").problemNaming(t, http.StatusBadRequest, "invalid_argument", "item_id")
		w.get(w.human, base+"?limit=100000").problemNaming(t, http.StatusBadRequest, "invalid_argument", "limit")
		w.get(w.human, base+"?cursor=garbage").problem(t, http.StatusBadRequest, "invalid_argument")
		w.get(w.human, "/v1/projects/alpha/items/00000000-0000-4000-8000-000000000001/leases").problem(t, http.StatusNotFound, "not_found")
	})
}

func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	it := w.item(w.human, w.p, obj{"title": "slow"})
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w", "lease_seconds": 1})
	lid := str(t, lease, "id")
	// Expiry is decided by the database clock: poll until the heartbeat is
	// refused, bounded well past the TTL.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": 1})
		if r.status == http.StatusConflict {
			r.problem(t, http.StatusConflict, "lease_lost")
			break
		}
		r.expect(t, http.StatusOK)
		if time.Now().After(deadline) {
			t.Fatalf("a 1 s lease is still alive after 10 s")
		}
		// Heartbeats renew by lease_seconds: stop renewing and wait for it.
		time.Sleep(1500 * time.Millisecond)
	}
	// The item is claimable again with a higher epoch; the old lease ends
	// expired; the stale worker changes nothing.
	l2, item := w.claim(w.agent, w.p, obj{"worker": "w"})
	if item["id"] != it["id"] || integer(t, l2, "epoch") != 2 {
		t.Fatalf("re-claim %v epoch %v", item["id"], l2["epoch"])
	}
	w.leaseCall(w.agent, lid, "complete", obj{"epoch": 1, "result": "late"}).problem(t, http.StatusConflict, "lease_lost")
	hist := w.pages(t, w.human, "/v1/projects/alpha/leases?outcome=expired", "leases")
	if len(hist) != 1 || hist[0] != lid {
		t.Fatalf("expired leases %v, want [%s]", hist, lid)
	}
	if n := w.count(`SELECT count(*) FROM items WHERE id = $1 AND result IS NULL AND status = 'open'`, it["id"]); n != 1 {
		t.Fatalf("late completion stored")
	}
}

func TestClaimConcurrency(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	t.Run("ManyClaimersFewItems", func(t *testing.T) {
		for i := 0; i < 30; i++ {
			w.item(w.human, w.p, obj{"title": "c", "labels": []string{"crowd"}})
		}
		answers := make(chan resp, 100)
		for i := 0; i < 100; i++ {
			go func() {
				answers <- w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "crowd", "labels": []string{"crowd"}})
			}()
		}
		items := map[any]bool{}
		for i := 0; i < 100; i++ {
			r := <-answers
			switch r.status {
			case http.StatusCreated:
				it := sub(t, r.json(t), "item")["id"]
				if items[it] {
					t.Fatalf("item %v leased twice", it)
				}
				items[it] = true
			case http.StatusNoContent:
			default:
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
		}
		if len(items) != 30 {
			t.Fatalf("%d items leased, want 30", len(items))
		}
		if n := w.count(`SELECT count(*) FROM leases WHERE ended_at IS NULL`); n != 30 {
			t.Fatalf("%d active leases", n)
		}
	})
	t.Run("ManyWaitingClaimers", func(t *testing.T) {
		// Waiting claims must not starve other requests: a server whose
		// pool has 4 connections keeps 20 claims waiting and still
		// creates the items they wait for. A waiting claim that held a
		// connection would leave item creation waiting until the claims
		// gave up (204 after their 30 s), and the claims' answers below
		// would be 204, not 201: no wall-clock bound decides it.
		t.Parallel()
		w := setupWorld(t, func(c *server.Config) { c.MaxConns = 4 })
		const n = 20
		answers := make(chan resp, n)
		for i := 0; i < n; i++ {
			go func() {
				answers <- w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "waiter", "wait_seconds": 30, "labels": []string{"late"}})
			}()
		}
		select {
		case r := <-answers:
			t.Fatalf("a claim answered before any item existed: %d %s", r.status, r.raw)
		case <-time.After(500 * time.Millisecond):
		}
		for i := 0; i < n; i++ {
			w.item(w.human, w.p, obj{"title": "late", "labels": []string{"late"}})
		}
		items := map[any]bool{}
		for i := 0; i < n; i++ {
			r := <-answers
			if r.status != http.StatusCreated {
				t.Fatalf("status %d (a waiting claim starved the item creation it waited for?): %s", r.status, r.raw)
			}
			items[sub(t, r.json(t), "item")["id"]] = true
		}
		if len(items) != n {
			t.Fatalf("%d distinct items for %d claims", len(items), n)
		}
	})
}
