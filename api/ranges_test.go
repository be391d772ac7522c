package api_test

import (
	"strings"
	"testing"
)

// TestIntegerOutOfRange: an integer the member cannot hold is refused
// saying it is out of range and what the range is; it used to say "must
// be an integer, got number 99999999999", of an integer. The member is
// named by its whole path, array indexes included (the decoder's own
// path, "items.priority", did not say which item).
func TestIntegerOutOfRange(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	before := f.count("SELECT count(*) FROM items")
	for _, tc := range []struct {
		name, path, body, field string
		want                    []string
	}{
		{"Priority", "/v1/projects/alpha/items", `{"title": "x", "priority": 2147483648}`, "priority",
			[]string{"out of range", "-2147483648", "2147483647", "2147483648"}},
		{"NegativePriority", "/v1/projects/alpha/items", `{"title": "x", "priority": -3e10}`, "priority",
			[]string{"out of range", "-2147483648", "2147483647"}},
		{"PlanItemPriority", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A"}, {"key": "b", "title": "B", "priority": 99999999999}]}`, "items[1].priority",
			[]string{"out of range", "2147483647"}},
		{"PlanChildPriority", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A", "children": [{"key": "c", "title": "C"}, {"key": "d", "title": "D", "priority": 1e12}]}]}`, "items[0].children[1].priority",
			[]string{"out of range"}},
		// Not an integer at all: said so, with the path.
		{"Fraction", "/v1/projects/alpha/plans", `{"items": [{"key": "a", "title": "A", "priority": 1.5}]}`, "items[0].priority",
			[]string{"must be an integer", "1.5"}},
		{"String", "/v1/projects/alpha/items", `{"title": "x", "priority": "high"}`, "priority",
			[]string{"must be an integer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.do("POST", tc.path, f.human.Token, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
			d, _ := p["detail"].(string)
			for _, w := range tc.want {
				if !strings.Contains(d, w) {
					t.Errorf("detail %q does not say %q", d, w)
				}
			}
		})
	}
	if after := f.count("SELECT count(*) FROM items"); after != before {
		t.Fatalf("items %d -> %d: a refused body stored something", before, after)
	}
}
