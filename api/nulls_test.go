package api_test

import (
	"strings"
	"testing"
)

// TestNullIsRefusedWhereNotDocumented: a member given as null is refused
// with 400 invalid_argument naming it, and nothing changes, unless
// openapi.json declares null for it (on_expiry, a webhook's recipient, and
// the members that take any JSON value). encoding/json left a null member
// at its zero value or absent, so {"priority": null} created an item of
// priority 0 and {"title": null} in a PATCH changed nothing and answered
// 200, as if the member had not been sent.
func TestNullIsRefusedWhereNotDocumented(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	it := f.mustItem(f.human.Token, map[string]any{"title": "kept"})
	itemPath := "/v1/projects/alpha/items/" + it.ID
	before := f.count("SELECT count(*) FROM items")
	version := f.count("SELECT version FROM items WHERE id = $1", it.ID)
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"CreatePriority", "POST", "/v1/projects/alpha/items", `{"title": "x", "priority": null}`, "priority"},
		{"CreateBody", "POST", "/v1/projects/alpha/items", `{"title": "x", "body": null}`, "body"},
		{"CreateLabels", "POST", "/v1/projects/alpha/items", `{"title": "x", "labels": null}`, "labels"},
		{"CreateLabelElement", "POST", "/v1/projects/alpha/items", `{"title": "x", "labels": ["a", null]}`, "labels[1]"},
		{"CreateTitle", "POST", "/v1/projects/alpha/items", `{"title": null}`, "title"},
		{"UpdateTitle", "PATCH", itemPath, `{"priority": 4, "title": null}`, "title"},
		{"UpdatePriority", "PATCH", itemPath, `{"title": "y", "priority": null}`, "priority"},
		{"UpdateMetadata", "PATCH", itemPath, `{"title": "y", "metadata": null}`, "metadata"},
		{"UpdateVersion", "PATCH", itemPath, `{"title": "y", "version": null}`, "version"},
		{"PlanItemPriority", "POST", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A"}, {"key": "b", "title": "B", "priority": null}]}`, "items[1].priority"},
		{"PlanChild", "POST", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A", "children": [null]}]}`, "items[0].children[0]"},
		{"Body", "POST", "/v1/projects/alpha/items", `null`, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.do(tc.method, tc.path, f.human.Token, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
			if d, _ := p["detail"].(string); !strings.Contains(d, "null") {
				t.Fatalf("detail %q does not say the value is null", d)
			}
		})
	}
	if after := f.count("SELECT count(*) FROM items"); after != before {
		t.Fatalf("items %d -> %d: a refused body stored something", before, after)
	}
	if v := f.count("SELECT version FROM items WHERE id = $1", it.ID); v != version {
		t.Fatalf("item version %d -> %d: a refused PATCH changed it", version, v)
	}
	t.Run("ClaimLabels", func(t *testing.T) {
		p := f.claim(f.agent.Token, `{"worker": "w", "labels": null}`).problem(t, 400, "invalid_argument")
		field(t, p, "labels")
		if n := f.count("SELECT count(*) FROM leases"); n != 0 {
			t.Fatalf("%d leases after a refused claim", n)
		}
	})

	// Where the contract declares null, it is taken.
	t.Run("DocumentedNulls", func(t *testing.T) {
		f.do("POST", "/v1/projects/alpha/items", f.human.Token, `{"title": "n", "on_expiry": null}`).ok(t, 201, nil)
		f.do("PATCH", itemPath, f.human.Token, `{"on_expiry": null}`).ok(t, 200, nil)
		c := f.mustClaim("w")
		f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", `{"epoch": 1, "progress": null}`).ok(t, 200, nil)
		f.mutate(f.agent.Token, c.Lease.ID, "complete", `{"epoch": 1, "result": null}`).ok(t, 200, nil)
	})
}

// TestUnknownFieldNamesItsPath: an unknown member deep in a body is named
// by its whole path, as every other refusal of a value is. The decoder's
// own refusal named the leaf only ("bogus"), which in a plan of a hundred
// items does not say which.
func TestUnknownFieldNamesItsPath(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	before := f.count("SELECT count(*) FROM items")
	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"TopLevel", "/v1/projects/alpha/items", `{"title": "x", "bogus": 1}`, "bogus"},
		{"PlanItem", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A"}, {"key": "b", "title": "B"}, {"key": "c", "title": "C"}, {"key": "d", "title": "D", "bogus": 1}]}`, "items[3].bogus"},
		{"PlanChild", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A", "children": [{"key": "c", "title": "C", "bogus": {"x": 1}}]}]}`, "items[0].children[0].bogus"},
		{"BatchEntry", "/v1/projects/alpha/heartbeats", `[{"lease_id": "00000000-0000-0000-0000-000000000001", "epoch": 1}, {"lease_id": "00000000-0000-0000-0000-000000000002", "epoch": 1, "bogus": true}]`, "body[1].bogus"},
		{"Usage", "/v1/projects/alpha/heartbeats", `[{"lease_id": "00000000-0000-0000-0000-000000000001", "epoch": 1, "usage": {"tokens": 5}}]`, "body[0].usage.tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := f.human.Token
			if strings.HasSuffix(tc.path, "heartbeats") {
				tok = f.agent.Token
			}
			p := f.do("POST", tc.path, tok, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
			if d, _ := p["detail"].(string); !strings.Contains(d, "unknown field") {
				t.Fatalf("detail %q does not say the field is unknown", d)
			}
		})
	}
	if after := f.count("SELECT count(*) FROM items"); after != before {
		t.Fatalf("items %d -> %d: a refused body stored something", before, after)
	}
	// metadata is the item's own JSON object: its members are not the
	// API's, so none of them is unknown.
	f.do("POST", "/v1/projects/alpha/items", f.human.Token, `{"title": "m", "metadata": {"x": {"bogus": 1}}}`).ok(t, 201, nil)
}
