package acceptance

import (
	"net/http"
	"testing"
)

// openAttention lists the open attention requests of project p.
func (w *world) openAttention(t *testing.T, token, p string) []any {
	t.Helper()
	body := w.get(token, "/v1/projects/"+p+"/attention?state=open").expect(t, http.StatusOK)
	if _, ok := body["next_cursor"]; !ok {
		t.Fatalf("no next_cursor: %v", body)
	}
	return list(t, body, "attention")
}

func TestAttention(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	it := w.item(w.human, w.p, obj{"title": "needs a person"})
	id := str(t, it, "id")
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w1"})
	lid := str(t, lease, "id")

	var attID string
	t.Run("Open", func(t *testing.T) {
		out := w.leaseCall(w.agent, lid, "attention", obj{
			"epoch": 1, "question": "Which database?", "suggested_answers": []string{"postgres", "sqlite"},
			"context": obj{"file": "db.go"},
		}).expect(t, http.StatusOK, http.StatusCreated)
		attID = attentionID(t, out)
		if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND outcome = 'attention_requested'`, lid); n != 1 {
			t.Fatalf("lease did not end attention_requested")
		}
		got := w.getItem(w.human, w.p, id)
		if got["state"] != "attention" || !mentions(sub(t, got, "blocked_by")["attention"], attID) {
			t.Fatalf("item %v", got)
		}
		if r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w1"}); r.status != http.StatusNoContent {
			t.Fatalf("item claimable while waiting: %d", r.status)
		}
		// The lease is over: every further call is lease_lost.
		w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": 1}).problem(t, http.StatusConflict, "lease_lost")
	})
	t.Run("List", func(t *testing.T) {
		reqs := w.openAttention(t, w.human, w.p)
		if len(reqs) != 1 {
			t.Fatalf("%d open requests", len(reqs))
		}
		r := reqs[0].(obj)
		if r["id"] != attID || !mentions(r, "Which database?") || !mentions(r, id) {
			t.Fatalf("request %v", r)
		}
		if len(w.openAttention(t, w.qHuman, w.q)) != 0 {
			t.Fatalf("project beta sees alpha's request")
		}
	})
	t.Run("ErrAgentResolves", func(t *testing.T) {
		w.post(w.agent, "/v1/attention/"+attID+"/resolve", obj{"answer": "sqlite"}).problem(t, http.StatusForbidden, "forbidden")
		if n := w.count(`SELECT count(*) FROM attention_requests WHERE state = 'open'`); n != 1 {
			t.Fatalf("agent resolved")
		}
	})
	t.Run("Resolve", func(t *testing.T) {
		w.post(w.human, "/v1/attention/"+attID+"/resolve", obj{"answer": "postgres, always"}).expect(t, http.StatusOK)
		if n := w.count(`SELECT count(*) FROM attention_requests WHERE id = $1 AND state = 'resolved' AND answer = 'postgres, always' AND resolved_by IS NOT NULL AND resolved_at IS NOT NULL`, attID); n != 1 {
			t.Fatalf("resolution not stored")
		}
		if got := w.getItem(w.human, w.p, id); got["state"] != "ready" {
			t.Fatalf("item %v after resolution", got["state"])
		}
		if len(w.openAttention(t, w.human, w.p)) != 0 {
			t.Fatalf("resolved request still listed as open")
		}
	})
	t.Run("ErrResolveTwice", func(t *testing.T) {
		w.post(w.human, "/v1/attention/"+attID+"/resolve", obj{"answer": "sqlite"}).problem(t, http.StatusConflict, "conflict")
		if n := w.count(`SELECT count(*) FROM attention_requests WHERE answer = 'postgres, always'`); n != 1 {
			t.Fatalf("second resolution changed the answer")
		}
	})
	t.Run("ContinuityAndContext", func(t *testing.T) {
		// Another worker does not get the item inside the continuity window.
		if r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w2"}); r.status != http.StatusNoContent {
			t.Fatalf("other worker got the item during the continuity window: %d %s", r.status, r.raw)
		}
		r := w.post(w.agent, "/v1/projects/alpha/claims", obj{"worker": "w1"})
		body := r.expect(t, http.StatusCreated)
		if sub(t, body, "item")["id"] != id {
			t.Fatalf("claimed another item")
		}
		if !mentions(body, "Which database?") || !mentions(body, "postgres, always") {
			t.Fatalf("re-claim lacks the question and answer: %s", r.raw)
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		w.post(w.human, "/v1/attention/00000000-0000-4000-8000-000000000001/resolve", obj{"answer": "x"}).problem(t, http.StatusNotFound, "not_found")
	})
}

func TestAttentionNonBlocking(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	w.item(w.human, w.p, obj{"title": "x"})
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
	lid := str(t, lease, "id")
	out := w.leaseCall(w.agent, lid, "attention", obj{"epoch": 1, "question": "FYI ok?", "blocking": false}).expect(t, http.StatusOK, http.StatusCreated)
	attID := attentionID(t, out)
	if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, lid); n != 1 {
		t.Fatalf("non-blocking request ended the lease")
	}
	w.post(w.human, "/v1/attention/"+attID+"/resolve", obj{"answer": "carry on"}).expect(t, http.StatusOK)
	hb := w.leaseCall(w.agent, lid, "heartbeat", obj{"epoch": 1})
	hb.expect(t, http.StatusOK)
	if !mentions(hb.json(t), "carry on") {
		t.Fatalf("heartbeat does not carry the answer: %s", hb.raw)
	}
}

func TestAttentionStale(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	w.item(w.human, w.p, obj{"title": "x"})
	lease, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
	w.leaseCall(w.agent, str(t, lease, "id"), "release", obj{"epoch": 1}).expect(t, http.StatusOK)
	cur, _ := w.claim(w.agent, w.p, obj{"worker": "w"})
	w.leaseCall(w.agent, str(t, lease, "id"), "attention", obj{"epoch": 1, "question": "late?"}).problem(t, http.StatusConflict, "lease_lost")
	w.leaseCall(w.agent, str(t, cur, "id"), "attention", obj{"epoch": 2}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "question")
	w.leaseCall(w.agent, str(t, cur, "id"), "attention", obj{"epoch": 2, "question": ""}).problemNaming(t, http.StatusBadRequest, "invalid_argument", "question")
	if n := w.count(`SELECT count(*) FROM attention_requests`); n != 0 {
		t.Fatalf("refused calls opened a request")
	}
	if n := w.count(`SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL`, cur["id"]); n != 1 {
		t.Fatalf("refused calls ended the current lease")
	}
}
