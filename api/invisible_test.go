package api_test

import (
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wire"
)

// TestInvisibleCharacters: a single-line text (a title, a plan key, a
// worker's label, a token's name) refuses control characters, tab and
// line breaks included, and invisible format characters: a U+202E
// RIGHT-TO-LEFT OVERRIDE makes "invoice\u202Efdp.exe" read as
// "invoiceexe.pdf", zero-width and tag characters hide text from the
// person reading it while an agent reads it. A multi-line text (a body,
// a question, an answer, a reason) keeps tabs and line breaks but refuses
// the other control characters (a terminal escape), bidirectional
// controls and tag characters. Each is 400 invalid_argument naming the
// field, and nothing changes; these used to be stored as given.
func TestInvisibleCharacters(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{"title": "kept", "body": "kept"})
	items := f.count("SELECT count(*) FROM items")
	for _, tc := range []struct {
		name, method, path, field string
		body                      map[string]any
	}{
		{"TitleTab", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\tb"}},
		{"TitleNewline", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\nb"}},
		{"TitleEscape", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\x1b[2Jb"}},
		{"TitleC1", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\u0085b"}},
		{"TitleOverride", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "invoice\u202efdp.exe"}},
		{"TitleIsolate", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\u2067b\u2069"}},
		{"TitleZeroWidthSpace", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\u200bb"}},
		{"TitleTag", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "ok\U000E0069\U000E0067\U000E006E"}},
		{"TitleLineSeparator", "POST", "/v1/projects/alpha/items", "title", map[string]any{"title": "a\u2028b"}},
		{"BodyOverride", "POST", "/v1/projects/alpha/items", "body", map[string]any{"title": "t", "body": "x\u202ey"}},
		{"BodyEscape", "POST", "/v1/projects/alpha/items", "body", map[string]any{"title": "t", "body": "x\x1b]0;owned\x07"}},
		{"BodyTag", "POST", "/v1/projects/alpha/items", "body", map[string]any{"title": "t", "body": "x\U000E0041"}},
		{"UpdateTitle", "PATCH", "/v1/projects/alpha/items/" + it.ID, "title", map[string]any{"title": "new\u202e"}},
		{"UpdateBody", "PATCH", "/v1/projects/alpha/items/" + it.ID, "body", map[string]any{"body": "new\u2066"}},
		{"CancelReason", "POST", "/v1/projects/alpha/items/" + it.ID + "/cancel", "reason", map[string]any{"reason": "r\u202e"}},
		{"HoldQuestion", "POST", "/v1/projects/alpha/items/" + it.ID + "/attention", "question", map[string]any{"question": "q\u202e"}},
		{"TokenName", "POST", "/v1/projects/alpha/tokens", "name", map[string]any{"name": "bot\u202e", "role": "agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := f.human.Token
			if tc.name == "TokenName" {
				tok = adminToken
			}
			p := f.do(tc.method, tc.path, tok, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
			if d, _ := p["detail"].(string); !strings.Contains(d, "U+") {
				t.Fatalf("detail %q does not name the character", d)
			}
		})
	}
	t.Run("PlanTitle", func(t *testing.T) {
		p := f.do("POST", "/v1/projects/alpha/plans", f.human.Token,
			map[string]any{"items": []any{map[string]any{"key": "a", "title": "A"}, map[string]any{"key": "b", "title": "B\u202e"}}}).problem(t, 400, "invalid_argument")
		if d, _ := p["detail"].(string); p["key"] != "b" || !strings.Contains(d, "title") || !strings.Contains(d, "U+202E") {
			t.Fatalf("problem %v: want the item b's title and the character named", p)
		}
	})
	t.Run("PlanKey", func(t *testing.T) {
		p := f.do("POST", "/v1/projects/alpha/plans", f.human.Token,
			map[string]any{"items": []any{map[string]any{"key": "a\tb", "title": "A"}}}).problem(t, 400, "invalid_argument")
		if d, _ := p["detail"].(string); !strings.Contains(d, "key") || !strings.Contains(d, "U+0009") {
			t.Fatalf("problem %v: want the key and the character named", p)
		}
	})
	if n := f.count("SELECT count(*) FROM items"); n != items {
		t.Fatalf("items %d -> %d: a refused request stored one", items, n)
	}
	if n := f.count("SELECT count(*) FROM items WHERE id = $1 AND title = 'kept' AND body = 'kept' AND version = 1 AND status = 'open'", it.ID); n != 1 {
		t.Fatal("a refused request changed the item")
	}
	if n := f.count("SELECT count(*) FROM attention_requests"); n != 0 {
		t.Fatalf("%d attention requests after refused holds", n)
	}

	// The worker's side.
	f.mustItem(f.human.Token, map[string]any{"title": "work"})
	t.Run("ClaimWorker", func(t *testing.T) {
		p := f.claim(f.agent.Token, map[string]any{"worker": "w\u202e1"}).problem(t, 400, "invalid_argument")
		field(t, p, "worker")
		if n := f.count("SELECT count(*) FROM leases"); n != 0 {
			t.Fatalf("%d leases after a refused claim", n)
		}
	})
	c := f.mustClaim("w1")
	for _, tc := range []struct {
		name, op, field string
		body            map[string]any
	}{
		{"DecomposeChildTitle", "decompose", "children[0].title", map[string]any{"epoch": c.Lease.Epoch, "children": []any{map[string]any{"key": "k", "title": "a\tb"}}}},
		{"DecomposeChildKey", "decompose", "children[0].key", map[string]any{"epoch": c.Lease.Epoch, "children": []any{map[string]any{"key": "k\u200b", "title": "t"}}}},
		{"AskQuestion", "attention", "question", map[string]any{"epoch": c.Lease.Epoch, "question": "which\u202e?"}},
		{"AskSuggestedAnswer", "attention", "suggested_answers[1]", map[string]any{"epoch": c.Lease.Epoch, "question": "which?", "suggested_answers": []string{"a", "b\nc"}}},
		{"ReleaseReason", "release", "reason", map[string]any{"epoch": c.Lease.Epoch, "reason": "r\u202e"}},
		{"FailError", "fail", "error", map[string]any{"epoch": c.Lease.Epoch, "error": "e\x1b[31m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.mutate(f.agent.Token, c.Lease.ID, tc.op, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
		})
	}
	if n := f.count("SELECT count(*) FROM leases WHERE ended_at IS NULL"); n != 1 {
		t.Fatalf("%d live leases, want the one claimed: a refused call ended it", n)
	}
	t.Run("StopReason", func(t *testing.T) {
		p := f.do("POST", "/v1/leases/"+c.Lease.ID+"/stop", f.human.Token, map[string]any{"reason": "stop\u202e"}).problem(t, 400, "invalid_argument")
		field(t, p, "reason")
		if n := f.count("SELECT count(*) FROM leases WHERE stop_requested_at IS NOT NULL"); n != 0 {
			t.Fatal("a refused stop request was recorded")
		}
	})

	// What people write is kept: scripts, emoji sequences, tabs and line
	// breaks where a text has lines.
	t.Run("OK", func(t *testing.T) {
		var got item
		f.do("POST", "/v1/projects/alpha/items", f.human.Token, map[string]any{
			"title": "café 日本語 میخواهم 👨\u200d👩\u200d👧 ✔\ufe0f", "body": "line 1\n\tindented\r\nline 3, soft\u00adhyphen",
		}).ok(t, 201, &got)
		f.mutate(f.agent.Token, c.Lease.ID, "release", map[string]any{"epoch": c.Lease.Epoch, "reason": "see:\n\t1. this"}).ok(t, 200, nil)
	})
}

// TestWebhookTextIsVisible: a webhook's recipient (a name its messages
// address) and description (its label in the list) are single lines of
// visible text too.
func TestWebhookTextIsVisible(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *server.Config) { c.Webhooks.Off = true })
	e.mustProject("alpha")
	human := e.mustToken("alpha", "ann", "human")
	base := "/v1/projects/alpha/webhooks"
	for _, tc := range []struct{ field, value string }{
		{"recipient", "ann\u202e"},
		{"recipient", "ann\nbob"},
		{"description", "ops\u200bchannel"},
		{"description", "ops\x1b[2J"},
	} {
		body := map[string]any{"url": "https://hooks.example.com/wg", tc.field: tc.value}
		field(t, e.do("POST", base, human.Token, body).problem(t, 400, "invalid_argument"), tc.field)
	}
	if n := e.count("SELECT count(*) FROM webhooks"); n != 0 {
		t.Fatalf("%d webhooks stored from refused requests", n)
	}
	var created wire.CreatedWebhook
	e.do("POST", base, human.Token, map[string]any{"url": "https://hooks.example.com/wg", "recipient": "Zoë", "description": "ops"}).ok(t, 201, &created)
	field(t, e.do("PATCH", base+"/"+created.ID, human.Token, map[string]any{"description": "x\u202ey"}).problem(t, 400, "invalid_argument"), "description")
	if n := e.count("SELECT count(*) FROM webhooks WHERE description = 'ops'"); n != 1 {
		t.Fatal("a refused edit changed the description")
	}
}
