package api_test

import (
	"strings"
	"testing"
)

// TestNotesAndReasonsAreBounded: the free texts a person sends with a
// decision about an item (a dismissal's note, a cancellation's reason) are
// bounded like a release's reason or an answer (64 KiB), and a refusal
// names the member the request sent (note, reason), changing nothing.
func TestNotesAndReasonsAreBounded(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	long := strings.Repeat("n", 65537)
	it := f.mustItem(f.human.Token, map[string]any{"title": "held"})
	var hold struct {
		ID string `json:"id"`
	}
	f.do("POST", "/v1/projects/alpha/items/"+it.ID+"/attention", f.human.Token, map[string]any{}).ok(t, 201, &hold)

	field(t, f.do("POST", "/v1/attention/"+hold.ID+"/dismiss", f.human.Token, map[string]any{"note": long}).problem(t, 400, "invalid_argument"), "note")
	field(t, f.do("POST", "/v1/projects/alpha/items/"+it.ID+"/cancel", f.human.Token, map[string]any{"reason": long}).problem(t, 400, "invalid_argument"), "reason")
	if n := f.count("SELECT count(*) FROM attention_requests WHERE state <> 'open'"); n != 0 {
		t.Fatal("a refused dismissal or cancellation closed the hold")
	}
	if n := f.count("SELECT count(*) FROM items WHERE status <> 'open'"); n != 0 {
		t.Fatal("a refused cancellation cancelled the item")
	}
}
