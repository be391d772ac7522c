package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/server"
)

func TestAttention(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.agent.Token, map[string]any{"title": "ask me"})
	c := f.mustClaim("w1")

	t.Run("ErrInvalid", func(t *testing.T) {
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 400, "invalid_argument"), "question")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": " "}).problem(t, 400, "invalid_argument"), "question")
		field(t, f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": "q", "blocking": "yes"}).problem(t, 400, "invalid_argument"), "blocking")
		if n := f.count("SELECT count(*) FROM attention_requests"); n != 0 {
			t.Fatal("a refused request was stored")
		}
	})
	t.Run("NonBlocking", func(t *testing.T) {
		var out struct {
			Attention attn
			Lease     lease
		}
		f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": "FYI: which style?", "blocking": false}).ok(t, 201, &out)
		if out.Attention.Blocking || out.Lease.EndedAt != nil {
			t.Fatalf("non-blocking ask %+v", out)
		}
		f.do("POST", "/v1/attention/"+out.Attention.ID+"/resolve", f.human.Token, map[string]any{"answer": "tabs"}).ok(t, 200, nil)
		var hb struct{ Answers []attn }
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, &hb)
		if len(hb.Answers) != 1 || hb.Answers[0].Answer == nil || *hb.Answers[0].Answer != "tabs" {
			t.Fatalf("heartbeat answers %+v", hb.Answers)
		}
	})
	var req attn
	t.Run("Blocking", func(t *testing.T) {
		var out struct {
			Attention attn
			Lease     lease
		}
		f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{
			"epoch": c.Lease.Epoch, "question": "Which database?", "suggested_answers": []string{"pg", "sqlite"}, "context": map[string]any{"k": 1},
		}).ok(t, 201, &out)
		if !out.Attention.Blocking || out.Lease.Outcome == nil || *out.Lease.Outcome != "attention_requested" {
			t.Fatalf("blocking ask %+v", out)
		}
		req = out.Attention
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+it.ID, f.agent.Token, nil).ok(t, 200, &got)
		if got.State != "attention" || len(got.BlockedBy.Attention) != 1 {
			t.Fatalf("item %+v", got)
		}
		f.claim(f.agent.Token, map[string]any{"worker": "w1"}).ok(t, 204, nil)
		f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": "again?"}).problem(t, 409, "lease_lost")
	})
	t.Run("List", func(t *testing.T) {
		var page struct {
			Attention  []attn
			NextCursor *string `json:"next_cursor"`
		}
		f.do("GET", "/v1/projects/alpha/attention?state=open", f.human.Token, nil).ok(t, 200, &page)
		if len(page.Attention) != 1 || page.Attention[0].ID != req.ID {
			t.Fatalf("open requests %+v", page)
		}
		f.do("GET", "/v1/projects/alpha/attention", f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Attention) != 2 {
			t.Fatalf("all requests %+v", page)
		}
		field(t, f.do("GET", "/v1/projects/alpha/attention?state=sleepy", f.human.Token, nil).problem(t, 400, "invalid_argument"), "state")
		field(t, f.do("GET", "/v1/projects/alpha/attention?limit=501", f.human.Token, nil).problem(t, 400, "invalid_argument"), "limit")
		f.do("GET", "/v1/projects/alpha/attention", f.otherHuman.Token, nil).problem(t, 404, "not_found")
		var one attn
		f.do("GET", "/v1/attention/"+req.ID, f.agent.Token, nil).ok(t, 200, &one)
		if one.Question != "Which database?" {
			t.Fatalf("request %+v", one)
		}
		f.do("GET", "/v1/attention/"+req.ID, f.otherHuman.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("Resolve", func(t *testing.T) {
		f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.agent.Token, map[string]any{"answer": "pg"}).problem(t, 403, "forbidden")
		f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.otherHuman.Token, map[string]any{"answer": "pg"}).problem(t, 404, "not_found")
		field(t, f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.human.Token, map[string]any{}).problem(t, 400, "invalid_argument"), "answer")
		field(t, f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.human.Token, map[string]any{"answer": ""}).problem(t, 400, "invalid_argument"), "answer")
		if n := f.count("SELECT count(*) FROM attention_requests WHERE state <> 'open' AND id = $1", req.ID); n != 0 {
			t.Fatal("a refused resolution was stored")
		}
		var out attn
		f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.human.Token, map[string]any{"answer": "pg"}).ok(t, 200, &out)
		if out.State != "resolved" || out.Answer == nil || *out.Answer != "pg" {
			t.Fatalf("resolved %+v", out)
		}
		f.do("POST", "/v1/attention/"+req.ID+"/resolve", f.human.Token, map[string]any{"answer": "sqlite"}).problem(t, 409, "conflict")
		// The next claim carries the question and the answer.
		var again claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w1"}).ok(t, 201, &again)
		if again.Item.ID != it.ID || len(again.Attention) != 2 {
			t.Fatalf("re-claim %+v", again)
		}
		last := again.Attention[len(again.Attention)-1]
		if last.Question != "Which database?" || last.Answer == nil || *last.Answer != "pg" {
			t.Fatalf("re-claim attention %+v", again.Attention)
		}
	})
	t.Run("HoldAndDismiss", func(t *testing.T) {
		other := f.mustItem(f.human.Token, map[string]any{"title": "wait for me"})
		f.do("POST", "/v1/projects/alpha/items/"+other.ID+"/attention", f.agent.Token, map[string]any{"question": "hold"}).problem(t, 403, "forbidden")
		var hold attn
		f.do("POST", "/v1/projects/alpha/items/"+other.ID+"/attention", f.human.Token, map[string]any{"question": "don't start yet"}).ok(t, 201, &hold)
		if !hold.Blocking || hold.State != "open" {
			t.Fatalf("hold %+v", hold)
		}
		// The same person's hold again: 200 with the open one, no second
		// hold to release.
		var again attn
		f.do("POST", "/v1/projects/alpha/items/"+other.ID+"/attention", f.human.Token, map[string]any{"question": "really, wait"}).ok(t, 200, &again)
		if again.ID != hold.ID || again.State != "open" {
			t.Fatalf("hold again %+v, want the open hold %s", again, hold.ID)
		}
		f.claim(f.agent.Token, map[string]any{"worker": "w9"}).ok(t, 204, nil)
		var list struct{ Attention []attn }
		f.do("GET", "/v1/projects/alpha/items/"+other.ID+"/attention", f.agent.Token, nil).ok(t, 200, &list)
		if len(list.Attention) != 1 {
			t.Fatalf("item attention %+v", list)
		}
		f.do("POST", "/v1/attention/"+hold.ID+"/dismiss", f.agent.Token, nil).problem(t, 403, "forbidden")
		var out attn
		f.do("POST", "/v1/attention/"+hold.ID+"/dismiss", f.human.Token, map[string]any{"note": "go ahead"}).ok(t, 200, &out)
		if out.State != "dismissed" {
			t.Fatalf("dismissed %+v", out)
		}
		f.do("POST", "/v1/attention/"+hold.ID+"/dismiss", f.human.Token, nil).problem(t, 409, "conflict")
		var c claimed
		f.claim(f.agent.Token, map[string]any{"worker": "w9"}).ok(t, 201, &c)
		if c.Item.ID != other.ID {
			t.Fatalf("claimed %+v", c.Item)
		}
	})
}

// TestContinuityWindowConfigured: the window set in server.Config.Attention
// is the one a resolved blocking request gives the worker that asked (not
// the attention package's 10-minute default).
func TestContinuityWindowConfigured(t *testing.T) {
	t.Parallel()
	const window = 2 * time.Hour
	f := itemSetup(t, func(c *server.Config) { c.Attention.ContinuityWindow = window })
	it := f.mustItem(f.agent.Token, map[string]any{"title": "ask and wait"})
	c := f.mustClaim("w1")
	var out struct{ Attention attn }
	f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": "which?"}).ok(t, 201, &out)
	f.do("POST", "/v1/attention/"+out.Attention.ID+"/resolve", f.human.Token, map[string]any{"answer": "this"}).ok(t, 200, nil)
	// preferred_until is set by the statement that releases the item, just
	// after the one that stamps resolved_at: the gap is the window plus
	// that statement's distance, never less than the window.
	var us int64
	err := f.pool.QueryRow(context.Background(), `
		SELECT (EXTRACT(EPOCH FROM i.preferred_until - a.resolved_at) * 1e6)::bigint
		FROM items i JOIN attention_requests a ON a.project_id = i.project_id AND a.item_id = i.id
		WHERE i.id = $1 AND a.id = $2`, it.ID, out.Attention.ID).Scan(&us)
	if err != nil {
		t.Fatal(err)
	}
	gap := time.Duration(us) * time.Microsecond
	if gap < window || gap > window+time.Minute {
		t.Fatalf("preferred_until is %v after resolved_at, want the configured %v", gap, window)
	}
}
