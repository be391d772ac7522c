package api_test

import (
	"fmt"
	"net/url"
	"testing"
)

// TestItemAttentionPaged: an item's requests are read a page at a time,
// oldest first, and a claim carries only the latest 20 of them, saying
// that older ones exist.
func TestItemAttentionPaged(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.agent.Token, map[string]any{"title": "chatty"})
	// 25 answered questions, as a looping worker and a patient person
	// leave them (written directly: the API's way is 50 requests).
	if _, err := f.pool.Exec(t.Context(), `
		INSERT INTO attention_requests (project_id, item_id, source, reason, requested_by, question, suggested_answers, blocking, created_at)
		SELECT i.project_id, i.id, 'person', 'question', 'ann', format('q%s', lpad(g::text, 2, '0')), '{}', false, now()
		FROM items i, generate_series(1, 25) AS g WHERE i.id = $1 ORDER BY g`, it.ID); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 25)
	for i := range want {
		want[i] = fmt.Sprintf("q%02d", i+1)
	}
	path := "/v1/projects/alpha/items/" + it.ID + "/attention"
	type page struct {
		Attention  []attn
		NextCursor *string `json:"next_cursor"`
	}
	questions := func(rs []attn) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Question
		}
		return out
	}

	t.Run("Pages", func(t *testing.T) {
		var got []string
		var sizes []int
		q := url.Values{"limit": {"10"}}
		for range 10 {
			var p page
			f.do("GET", path+"?"+q.Encode(), f.agent.Token, nil).ok(t, 200, &p)
			got, sizes = append(got, questions(p.Attention)...), append(sizes, len(p.Attention))
			if p.NextCursor == nil {
				break
			}
			q.Set("cursor", *p.NextCursor)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(sizes) != "[10 10 5]" {
			t.Fatalf("pages %v of %v, want %v in pages of 10", sizes, got, want)
		}
		var p page
		f.do("GET", path, f.agent.Token, nil).ok(t, 200, &p)
		if fmt.Sprint(questions(p.Attention)) != fmt.Sprint(want) || p.NextCursor != nil {
			t.Fatalf("default page = %v, next %v; want all 25 and no next page", questions(p.Attention), p.NextCursor)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for query, fld := range map[string]string{
			"limit=0": "limit", "limit=501": "limit", "limit=ten": "limit", "page_size=0": "page_size",
			"cursor=bogus": "cursor", "after=3": "after",
		} {
			field(t, f.do("GET", path+"?"+query, f.agent.Token, nil).problem(t, 400, "invalid_argument"), fld)
		}
	})
	t.Run("Claim", func(t *testing.T) {
		var c struct {
			claimed
			OlderAttention bool `json:"older_attention"`
		}
		f.claim(f.agent.Token, map[string]any{"worker": "w"}).ok(t, 201, &c)
		if c.Item.ID != it.ID || fmt.Sprint(questions(c.Attention)) != fmt.Sprint(want[5:]) || !c.OlderAttention {
			t.Fatalf("claim carries %v (older %v), want the latest 20, %v, and older_attention", questions(c.Attention), c.OlderAttention, want[5:])
		}
	})
}

// TestAskOpenBound: a lease's 21st open non-blocking question is refused
// with 409 too_many_open_requests and stores nothing.
func TestAskOpenBound(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	f.mustItem(f.agent.Token, map[string]any{"title": "curious"})
	c := f.mustClaim("w")
	ask := func(q string) resp {
		return f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": q, "blocking": false})
	}
	for i := range 20 {
		ask(fmt.Sprintf("question %d", i)).ok(t, 201, nil)
	}
	p := ask("one more").problem(t, 409, "too_many_open_requests")
	if p["lease_id"] != c.Lease.ID || p["max_open_requests"] != float64(20) {
		t.Fatalf("problem %v, want lease_id %s and max_open_requests 20", p, c.Lease.ID)
	}
	if n := f.count("SELECT count(*) FROM attention_requests"); n != 20 {
		t.Fatalf("%d requests stored, want the 20 granted", n)
	}
}
