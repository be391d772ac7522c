package api_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/server"
)

type lease struct {
	ID            string          `json:"id"`
	ItemID        string          `json:"item_id"`
	Worker        string          `json:"worker"`
	Epoch         int64           `json:"epoch"`
	AcquiredAt    string          `json:"acquired_at"`
	ExpiresAt     string          `json:"expires_at"`
	EndedAt       *string         `json:"ended_at"`
	Outcome       *string         `json:"outcome"`
	OutcomeDetail json.RawMessage `json:"outcome_detail"`
}

type attn struct {
	ID       string  `json:"id"`
	ItemID   string  `json:"item_id"`
	Question string  `json:"question"`
	State    string  `json:"state"`
	Answer   *string `json:"answer"`
	Blocking bool    `json:"blocking"`
}

type claimed struct {
	Lease     lease
	Item      item
	Attention []attn
}

func (f itemFixture) claim(tok string, body any) resp {
	f.t.Helper()
	return f.do("POST", "/v1/projects/alpha/claims", tok, body)
}

func (f itemFixture) mustClaim(worker string) claimed {
	f.t.Helper()
	var c claimed
	f.claim(f.agent.Token, map[string]any{"worker": worker}).ok(f.t, 201, &c)
	return c
}

func (f itemFixture) mutate(tok, leaseID, op string, body any) resp {
	f.t.Helper()
	return f.do("POST", "/v1/leases/"+leaseID+"/"+op, tok, body)
}

func TestClaims(t *testing.T) {
	t.Parallel()
	// A waiting claim's recheck would come only after an hour: one woken
	// within its wait_seconds was woken by the notification (LongPollWoken).
	f := itemSetup(t, func(c *server.Config) { c.Lease.WaitRecheck = time.Hour })

	t.Run("NothingReady", func(t *testing.T) {
		r := f.claim(f.agent.Token, map[string]any{"worker": "w1"})
		if r.status != 204 || len(r.body) != 0 {
			t.Fatalf("status %d body %q, want 204 and no body", r.status, r.body)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "bait"})
		for body, fld := range map[string]string{
			`{}`:                                      "worker",
			`{"worker": ""}`:                          "worker",
			`{"worker": 1}`:                           "worker",
			`{"worker": "w", "wait_seconds": 61}`:     "wait_seconds",
			`{"worker": "w", "wait_seconds": -1}`:     "wait_seconds",
			`{"worker": "w", "wait_seconds": "5"}`:    "wait_seconds",
			`{"worker": "w", "lease_seconds": 0}`:     "lease_seconds",
			`{"worker": "w", "lease_seconds": 1e9}`:   "lease_seconds",
			`{"worker": "w", "lease_seconds": 86401}`: "lease_seconds",
			`{"worker": "w", "epoch": 5}`:             "epoch",
			`{"worker": "w", "item_id": "x"}`:         "item_id",
			`{"worker": "w", "labels": "x"}`:          "labels",
		} {
			field(t, f.claim(f.agent.Token, body).problem(t, 400, "invalid_argument"), fld)
		}
		if n := f.count("SELECT count(*) FROM leases"); n != 0 {
			t.Fatalf("refused claims stored %d leases", n)
		}
	})
	t.Run("ErrRole", func(t *testing.T) {
		f.claim(f.human.Token, map[string]any{"worker": "w"}).problem(t, 403, "forbidden")
		// Another project's token learns nothing about alpha: not found.
		f.do("POST", "/v1/projects/alpha/claims", f.otherHuman.Token, map[string]any{"worker": "w"}).problem(t, 404, "not_found")
		if n := f.count("SELECT count(*) FROM leases"); n != 0 {
			t.Fatal("a refused claim stored a lease")
		}
	})
	t.Run("OK", func(t *testing.T) {
		var top map[string]any
		f.claim(f.agent.Token, map[string]any{"worker": "w1", "lease_seconds": 60}).ok(t, 201, &top)
		raw := map[string]map[string]any{"lease": top["lease"].(map[string]any), "item": top["item"].(map[string]any)}
		if _, ok := top["attention"].([]any); !ok {
			t.Fatalf("claim lacks the attention history: %v", top)
		}
		for _, k := range []string{"id", "item_id", "worker", "epoch", "acquired_at", "expires_at", "ended_at", "outcome", "outcome_detail"} {
			if _, ok := raw["lease"][k]; !ok {
				t.Fatalf("lease lacks %q: %v", k, raw["lease"])
			}
		}
		if raw["lease"]["epoch"].(float64) != 1 || raw["item"]["state"] != "leased" || raw["lease"]["worker"] != "w1" {
			t.Fatalf("claim %v", raw)
		}
		acq, _ := time.Parse(time.RFC3339Nano, raw["lease"]["acquired_at"].(string))
		exp, _ := time.Parse(time.RFC3339Nano, raw["lease"]["expires_at"].(string))
		if d := exp.Sub(acq); d != 60*time.Second {
			t.Fatalf("lease of %s, want 60s", d)
		}
	})
	t.Run("Labels", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "gpu job", "labels": []string{"gpu"}})
		f.mustItem(f.agent.Token, map[string]any{"title": "plain", "priority": 5})
		var c claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w2", "labels": []string{"gpu"}}).ok(t, 201, &c)
		if c.Item.Title != "gpu job" {
			t.Fatalf("label claim got %q", c.Item.Title)
		}
	})
	t.Run("LongPollNothing", func(t *testing.T) {
		f.mustClaim("w3") // takes "plain"; nothing is left
		start := time.Now()
		r := f.claim(f.agent.Token, map[string]any{"worker": "w3", "wait_seconds": 1})
		if r.status != 204 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		if d := time.Since(start); d < time.Second {
			t.Fatalf("answered after %s, before wait_seconds", d)
		}
	})
	t.Run("LongPollWoken", func(t *testing.T) {
		// The claim waits up to 30 s and would recheck only after an hour,
		// so a lease before then is the notification's doing (however slow
		// the machine), and a lost notification answers 204 at 30 s.
		done := make(chan resp, 1)
		go func() { done <- f.claim(f.agent.Token, map[string]any{"worker": "w4", "wait_seconds": 30}) }()
		// Let the claim start waiting, then make work ready (a claim
		// still starting finds the item at once: also a pass).
		time.Sleep(300 * time.Millisecond)
		it := f.mustItem(f.human.Token, map[string]any{"title": "late work"})
		r := <-done
		if r.status == 204 {
			t.Fatal("the waiting claim was not woken by the new item within its 30 s")
		}
		var c claimed
		r.ok(t, 201, &c)
		if c.Item.ID != it.ID {
			t.Fatalf("woken claim got %+v", c.Item)
		}
	})
}

func TestLeaseMutations(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	otherAgent := f.mustToken("beta", "bob", "agent")

	t.Run("ErrEpoch", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "e"})
		c := f.mustClaim("w")
		for _, op := range []string{"heartbeat", "complete", "release", "fail", "decompose", "attention"} {
			for _, body := range []string{`{}`, `{"epoch": "1"}`, `{"epoch": 1.5}`, `{"epoch": -1}`, `{"epoch": 0}`, `{"epoch": null}`} {
				field(t, f.mutate(f.agent.Token, c.Lease.ID, op, body).problem(t, 400, "invalid_argument"), "epoch")
			}
		}
		var l lease
		f.do("GET", "/v1/leases/"+c.Lease.ID, f.agent.Token, nil).ok(t, 200, &l)
		if l.EndedAt != nil {
			t.Fatalf("refused mutations ended the lease: %+v", l)
		}
		f.mutate(f.agent.Token, c.Lease.ID, "release", map[string]any{"epoch": 1}).ok(t, 200, nil)
	})
	t.Run("Heartbeat", func(t *testing.T) {
		c := f.mustClaim("w")
		var hb struct {
			Lease         lease
			ExpiresAt     string `json:"expires_at"`
			StopRequested bool   `json:"stop_requested"`
			Answers       []attn
		}
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{
			"epoch": c.Lease.Epoch, "progress": map[string]any{"pct": 50}, "lease_seconds": 120, "worker_time": "2024-01-01T00:00:00Z",
		}).ok(t, 200, &hb)
		if hb.ExpiresAt == "" || hb.Lease.ID != c.Lease.ID || hb.StopRequested || hb.Answers == nil {
			t.Fatalf("heartbeat %+v", hb)
		}
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch, "worker_time": "yesterday"}).problem(t, 400, "invalid_argument"), "worker_time")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch, "lease_seconds": 999999}).problem(t, 400, "invalid_argument"), "lease_seconds")

		t.Run("Stop", func(t *testing.T) {
			f.do("POST", "/v1/leases/"+c.Lease.ID+"/stop", f.agent.Token, nil).problem(t, 403, "forbidden")
			f.do("POST", "/v1/leases/"+c.Lease.ID+"/stop", f.human.Token, map[string]any{"reason": "wrong approach"}).ok(t, 200, nil)
			f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, &hb)
			if !hb.StopRequested {
				t.Fatal("heartbeat does not carry stop_requested after a stop")
			}
		})
		t.Run("ErrRoleAndProject", func(t *testing.T) {
			f.mutate(f.human.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 403, "forbidden")
			f.mutate(otherAgent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 404, "not_found")
			f.do("GET", "/v1/leases/"+c.Lease.ID, otherAgent.Token, nil).problem(t, 404, "not_found")
			f.mutate(f.agent.Token, "00000000-0000-0000-0000-000000000009", "heartbeat", map[string]any{"epoch": 1}).problem(t, 404, "not_found")
		})
		t.Run("ErrAnotherAgentsLease", func(t *testing.T) {
			// Same project, another agent token: the lease is not its own.
			sameProject := f.mustToken("alpha", "carol", "agent")
			for _, op := range []string{"heartbeat", "complete", "release", "fail", "decompose", "attention"} {
				f.mutate(sameProject.Token, c.Lease.ID, op, map[string]any{"epoch": c.Lease.Epoch}).problem(t, 403, "forbidden")
			}
			var l lease
			f.do("GET", "/v1/leases/"+c.Lease.ID, f.agent.Token, nil).ok(t, 200, &l)
			if l.EndedAt != nil {
				t.Fatalf("another agent's calls ended the lease: %+v", l)
			}
			if n := f.count("SELECT count(*) FROM attention_requests"); n != 0 {
				t.Fatalf("another agent's ask stored %d attention requests", n)
			}
		})
		t.Run("ErrLeaseLost", func(t *testing.T) {
			f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch + 1}).problem(t, 409, "lease_lost")
			f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch + 1, "result": 1}).problem(t, 409, "lease_lost")
			var it item
			f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &it)
			if it.State != "leased" {
				t.Fatalf("a fenced-off call changed the item: %+v", it)
			}
		})
		f.mutate(f.agent.Token, c.Lease.ID, "release", map[string]any{"epoch": c.Lease.Epoch, "reason": "done testing"}).ok(t, 200, nil)
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 409, "lease_lost")
	})
	t.Run("Complete", func(t *testing.T) {
		c := f.mustClaim("w")
		var done struct {
			Lease    lease
			Item     item
			Replayed bool
		}
		result := map[string]any{"answer": 42}
		f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch, "result": result}).ok(t, 200, &done)
		if done.Replayed || done.Item.State != "done" || done.Lease.Outcome == nil || *done.Lease.Outcome != "completed" {
			t.Fatalf("completion %+v", done)
		}
		f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch, "result": result}).ok(t, 200, &done)
		if !done.Replayed {
			t.Fatal("identical repeat not replayed")
		}
		f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch, "result": map[string]any{"answer": 41}}).problem(t, 409, "conflicting_result")
		var detail struct {
			lease
			Observations []struct{ Kind string }
		}
		f.do("GET", "/v1/leases/"+c.Lease.ID, f.human.Token, nil).ok(t, 200, &detail)
		if len(detail.Observations) == 0 || detail.Observations[len(detail.Observations)-1].Kind != "conflicting_result" {
			t.Fatalf("conflicting result not observed: %+v", detail.Observations)
		}
		var it item
		f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &it)
		if fmt.Sprint(it.Result) != fmt.Sprint(map[string]any{"answer": float64(42)}) {
			t.Fatalf("stored result %v", it.Result)
		}
	})
	t.Run("Fail", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "flaky"})
		c := f.mustClaim("w")
		// error is optional, but a string or an object.
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "fail", map[string]any{"epoch": c.Lease.Epoch, "error": 5}).problem(t, 400, "invalid_argument"), "error")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "fail", map[string]any{"epoch": c.Lease.Epoch, "error": map[string]any{"message": "m"}, "details": 1}).problem(t, 400, "invalid_argument"), "error")
		var out struct {
			Lease      lease
			Item       item
			RetryAfter *string `json:"retry_after"`
		}
		f.mutate(f.agent.Token, c.Lease.ID, "fail", map[string]any{"epoch": c.Lease.Epoch, "error": "boom", "details": map[string]any{"exit": 1}}).ok(t, 200, &out)
		if out.Lease.Outcome == nil || *out.Lease.Outcome != "failed" || out.RetryAfter == nil || out.Item.State != "blocked" {
			t.Fatalf("fail %+v", out)
		}
	})
	t.Run("Decompose", func(t *testing.T) {
		f.mustItem(f.agent.Token, map[string]any{"title": "big", "priority": 100})
		c := f.mustClaim("w")
		if c.Item.Title != "big" {
			t.Fatalf("claimed %q", c.Item.Title)
		}
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{}}).problem(t, 400, "invalid_argument"), "children")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{map[string]any{"title": "t"}}}).problem(t, 400, "invalid_argument"), "children[0].key")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{map[string]any{"key": "k", "title": ""}}}).problem(t, 400, "invalid_argument"), "children[0].title")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{map[string]any{"key": "k", "title": "t", "state": "done"}}}).problem(t, 400, "invalid_argument"), "children[0].state")
		f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{
			map[string]any{"key": "a", "title": "A", "depends_on_keys": []string{"b"}},
			map[string]any{"key": "b", "title": "B", "depends_on_keys": []string{"a"}},
		}}).problem(t, 409, "dependency_cycle")
		// requires and touches are checked as at an item's creation.
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{
			map[string]any{"key": "a", "title": "A"},
			map[string]any{"key": "b", "title": "B", "touches": []string{"repo:a//b"}},
		}}).problem(t, 400, "invalid_argument"), "children[1].touches")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{
			map[string]any{"key": "a", "title": "A", "requires": []string{"a b"}},
		}}).problem(t, 400, "invalid_argument"), "children[0].requires")
		var out struct {
			Lease    lease
			Children []item
		}
		f.mutate(f.agent.Token, c.Lease.ID, "decompose", map[string]any{"epoch": c.Lease.Epoch, "children": []any{
			map[string]any{"key": "a", "title": "A", "body": "first", "priority": 3, "labels": []string{"x"},
				"requires": []string{"go"}, "touches": []string{"repo:web/**"}},
			map[string]any{"key": "b", "title": "B", "depends_on_keys": []string{"a"}},
		}}).ok(t, 200, &out)
		if len(out.Children) != 2 || out.Lease.Outcome == nil || *out.Lease.Outcome != "decomposed" {
			t.Fatalf("decompose %+v", out)
		}
		if r, tc := out.Children[0].Requires, out.Children[0].Touches; fmt.Sprint(r) != "[go]" || fmt.Sprint(tc) != "[repo:web/**]" {
			t.Fatalf("child a: requires %v touches %v, want [go] [repo:web/**]", r, tc)
		}
		if r, tc := out.Children[1].Requires, out.Children[1].Touches; r == nil || tc == nil || len(r)+len(tc) != 0 {
			t.Fatalf("child b: requires %v touches %v, want none", r, tc)
		}
		var parent item
		f.do("GET", "/v1/projects/alpha/items/"+c.Item.ID, f.agent.Token, nil).ok(t, 200, &parent)
		if parent.State != "blocked" || len(parent.BlockedBy.Children) != 2 {
			t.Fatalf("parent %+v", parent)
		}
	})
}

func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	stub := clock.NewStub(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	e := setup(t, func(c *server.Config) { c.Clock = stub })
	e.mustProject("alpha")
	f := itemFixture{env: e, agent: e.mustToken("alpha", "bot", "agent"), human: e.mustToken("alpha", "ann", "human")}
	f.mustItem(f.agent.Token, map[string]any{"title": "slow"})
	var c claimed
	f.claim(f.agent.Token, map[string]any{"worker": "w1", "lease_seconds": 30}).ok(t, 201, &c)
	stub.Advance(31 * time.Second)
	f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 409, "lease_lost")
	// Another worker takes it over with a new epoch; the first is fenced off.
	var c2 claimed
	f.claim(f.agent.Token, map[string]any{"worker": "w2"}).ok(t, 201, &c2)
	if c2.Item.ID != c.Item.ID || c2.Lease.Epoch != c.Lease.Epoch+1 {
		t.Fatalf("re-claim %+v", c2.Lease)
	}
	f.mutate(f.agent.Token, c.Lease.ID, "complete", map[string]any{"epoch": c.Lease.Epoch, "result": "late"}).problem(t, 409, "lease_lost")
	var first lease
	f.do("GET", "/v1/leases/"+c.Lease.ID, f.agent.Token, nil).ok(t, 200, &first)
	if first.Outcome == nil || *first.Outcome != "expired" {
		t.Fatalf("first lease %+v", first)
	}
}

func TestMaxLiveLeasesPerToken(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *server.Config) { c.MaxActiveLeasesPerToken = 1 })
	e.mustProject("alpha")
	f := itemFixture{env: e, agent: e.mustToken("alpha", "bot", "agent")}
	f.mustItem(f.agent.Token, map[string]any{"title": "one"})
	f.mustItem(f.agent.Token, map[string]any{"title": "two"})
	f.mustClaim("w1")
	f.claim(f.agent.Token, map[string]any{"worker": "w2"}).problem(t, 429, "rate_limited")
	if n := f.count("SELECT count(*) FROM leases"); n != 1 {
		t.Fatalf("%d leases, want 1", n)
	}
	// Another token has its own allowance.
	other := e.mustToken("alpha", "bot2", "agent")
	f.claim(other.Token, map[string]any{"worker": "w3"}).ok(t, 201, nil)
}

func TestLeaseHistory(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	a := f.mustItem(f.agent.Token, map[string]any{"title": "A", "priority": 2})
	f.mustItem(f.agent.Token, map[string]any{"title": "B", "priority": 1})
	c1 := f.mustClaim("w1")
	f.mutate(f.agent.Token, c1.Lease.ID, "release", map[string]any{"epoch": c1.Lease.Epoch}).ok(t, 200, nil)
	c2 := f.mustClaim("w2")
	f.mutate(f.agent.Token, c2.Lease.ID, "complete", map[string]any{"epoch": c2.Lease.Epoch, "result": "ok"}).ok(t, 200, nil)
	c3 := f.mustClaim("w1")
	if c1.Item.ID != a.ID || c2.Item.ID != a.ID || c3.Item.ID == a.ID {
		t.Fatalf("claims went %s %s %s", c1.Item.ID, c2.Item.ID, c3.Item.ID)
	}
	type page struct {
		Leases     []lease
		NextCursor *string `json:"next_cursor"`
	}
	var p page
	f.do("GET", "/v1/projects/alpha/leases", f.human.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 3 || p.Leases[0].ID != c1.Lease.ID || p.Leases[2].ID != c3.Lease.ID || p.NextCursor != nil {
		t.Fatalf("history %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?worker=w1", f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 2 {
		t.Fatalf("worker w1: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?outcome=completed", f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 1 || p.Leases[0].ID != c2.Lease.ID {
		t.Fatalf("completed: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?item_id="+a.ID, f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 2 {
		t.Fatalf("item a: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/items/"+a.ID+"/leases", f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 2 || p.Leases[0].Epoch != 1 || p.Leases[1].Epoch != 2 {
		t.Fatalf("item leases: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?limit=1", f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 1 || p.NextCursor == nil {
		t.Fatalf("page 1: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?limit=2&cursor="+*p.NextCursor, f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 2 || p.Leases[0].ID != c2.Lease.ID {
		t.Fatalf("page 2: %+v", p)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	f.do("GET", "/v1/projects/alpha/leases?since="+future, f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 0 {
		t.Fatalf("since the future: %+v", p)
	}
	f.do("GET", "/v1/projects/alpha/leases?until="+future, f.agent.Token, nil).ok(t, 200, &p)
	if len(p.Leases) != 3 {
		t.Fatalf("until the future: %+v", p)
	}
	// A range whose end is before its start matches nothing by its
	// parameters' mistake, not the history's: refused, naming until.
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	p2 := f.do("GET", "/v1/projects/alpha/leases?since="+future+"&until="+past, f.agent.Token, nil).problem(t, 400, "invalid_argument")
	field(t, p2, "until")
	field(t, f.do("GET", "/v1/projects/alpha/items/"+a.ID+"/leases?since="+future+"&until="+past, f.agent.Token, nil).problem(t, 400, "invalid_argument"), "until")
	f.do("GET", "/v1/projects/alpha/leases?since="+future+"&until="+future, f.agent.Token, nil).ok(t, 200, &p)
	for q, fld := range map[string]string{
		"since=yesterday": "since", "until=1": "until", "outcome=won": "outcome", "item_id=x": "item_id",
		"limit=0": "limit", "limit=1000": "limit", "cursor=zzz": "cursor", "color=red": "color",
	} {
		field(t, f.do("GET", "/v1/projects/alpha/leases?"+q, f.agent.Token, nil).problem(t, 400, "invalid_argument"), fld)
	}
	f.do("GET", "/v1/projects/alpha/leases", f.otherHuman.Token, nil).problem(t, 404, "not_found")
	f.do("GET", "/v1/projects/alpha/items/"+a.ID+"/leases", f.otherHuman.Token, nil).problem(t, 404, "not_found")

	var w struct {
		Active  []lease
		Workers []struct {
			Worker string
			Active int
		}
	}
	f.do("GET", "/v1/projects/alpha/workers", f.human.Token, nil).ok(t, 200, &w)
	if len(w.Active) != 1 || len(w.Workers) != 2 {
		t.Fatalf("workers %+v", w)
	}
}
