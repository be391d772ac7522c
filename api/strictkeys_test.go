package api_test

import (
	"testing"
)

// TestKeysAreExact: a body names each field exactly once and exactly as
// documented. encoding/json took "Title" or "TITLE" for title and kept the
// last of two "title"s, so {"title": "a", "TITLE": "b"} stored "b" and
// {"epoch": 1, "epoch": 2} decided by the second: what a proxy or log
// reading the first saw was not what the server did. Such a body is now
// 400 invalid_argument naming the key, and nothing is stored.
func TestKeysAreExact(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	before := f.count("SELECT count(*) FROM items")
	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"CaseOfAField", "/v1/projects/alpha/items", `{"Title": "x"}`, "Title"},
		{"CaseBesideTheField", "/v1/projects/alpha/items", `{"title": "a", "TITLE": "b"}`, "TITLE"},
		{"Twice", "/v1/projects/alpha/items", `{"title": "a", "title": "b"}`, "title"},
		{"TwiceInMetadata", "/v1/projects/alpha/items", `{"title": "a", "metadata": {"owner": 1, "owner": 2}}`, "metadata.owner"},
		{"CaseInAPlanChild", "/v1/projects/alpha/plans", `{"items": [{"key": "p", "title": "p", "children": [{"key": "c", "Title": "c"}]}]}`, "items[0].children[0].Title"},
		{"CaseInABatchEntry", "/v1/projects/alpha/heartbeats", `[{"lease_id": "00000000-0000-0000-0000-000000000001", "Epoch": 1}]`, "body[0].Epoch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := f.human.Token
			if tc.name == "CaseInABatchEntry" {
				tok = f.agent.Token
			}
			p := f.do("POST", tc.path, tok, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
		})
	}
	if after := f.count("SELECT count(*) FROM items"); after != before {
		t.Fatalf("items %d -> %d: a refused body stored something", before, after)
	}
}
