package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestPlanLimits: a plan import meets two limits, each reachable and each
// naming itself. The body limit of every route (1 MiB) used to apply to
// plans too, and a plan of graph.MaxPlanItems items, at a few dozen bytes
// each, is over it: the item bound could never be met, and a user was
// told only that the body exceeded 1048576 bytes. The plan route takes a
// body of up to 16 MiB; a plan of more items than graph.MaxPlanItems is
// 400 invalid_argument on "items", saying so; a bigger body is 413 saying
// it is the limit of a plan import.
func TestPlanLimits(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	plan := func(items int, pad int) string {
		var b strings.Builder
		b.WriteString(`{"dry_run": true, "items": [`)
		for i := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"key":"k%d","title":"t"`, i)
			if pad > 0 {
				fmt.Fprintf(&b, `,"body":"%s"`, strings.Repeat("b", pad))
			}
			b.WriteByte('}')
		}
		b.WriteString(`]}`)
		return b.String()
	}

	t.Run("ItemBound", func(t *testing.T) {
		body := plan(graph.MaxPlanItems+1, 0)
		if len(body) <= 1<<20 {
			t.Fatalf("the plan is %d bytes: not over the 1 MiB of other routes, so this test could not fail", len(body))
		}
		p := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, body).problem(t, 400, "invalid_argument")
		field(t, p, "items")
		if d := p["detail"].(string); !strings.Contains(d, strconv.Itoa(graph.MaxPlanItems)) || !strings.Contains(d, "items") {
			t.Fatalf("detail %q does not name the item limit", d)
		}
	})
	t.Run("AtTheItemBound", func(t *testing.T) {
		// As many as the bound, with some text each, and over 1 MiB: taken.
		body := plan(graph.MaxPlanItems, 20)
		if len(body) <= 1<<20 {
			t.Fatalf("the plan is %d bytes, want more than 1 MiB", len(body))
		}
		var res struct {
			Keys map[string]string `json:"keys"`
		}
		f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, body).ok(t, 200, &res)
		if len(res.Keys) != graph.MaxPlanItems {
			t.Fatalf("dry run answered %d keys, want %d", len(res.Keys), graph.MaxPlanItems)
		}
	})
	t.Run("BodyBound", func(t *testing.T) {
		body := `{"items": [{"key": "a", "title": "A", "body": "` + strings.Repeat("b", 16<<20) + `"}]}`
		p := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, body).problem(t, 413, "payload_too_large")
		if d := p["detail"].(string); !strings.Contains(d, "16 MiB") || !strings.Contains(d, "plan") {
			t.Fatalf("detail %q does not say it is the 16 MiB limit of a plan import", d)
		}
	})
	t.Run("OtherRoutes", func(t *testing.T) {
		body := `{"title": "x", "body": "` + strings.Repeat("b", 1<<20) + `"}`
		p := f.do("POST", "/v1/projects/alpha/items", f.agent.Token, body).problem(t, 413, "payload_too_large")
		if d := p["detail"].(string); !strings.Contains(d, "1 MiB") {
			t.Fatalf("detail %q does not say the limit is 1 MiB", d)
		}
	})
	if n := f.count("SELECT count(*) FROM items"); n != 0 {
		t.Fatalf("%d items stored by dry runs and refused plans", n)
	}
}

// TestPlanOnExpiry: a plan item's on_expiry is stored on its item, as on
// an item created alone; an unknown value is 400 naming the item's line.
func TestPlanOnExpiry(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	var res struct {
		Keys map[string]string `json:"keys"`
	}
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token,
		`{"items": [{"key": "deploy", "title": "Deploy", "on_expiry": "reconcile"}, {"key": "docs", "title": "Docs"}]}`).ok(t, 201, &res)
	for key, want := range map[string]any{"deploy": "reconcile", "docs": nil} {
		var it map[string]any
		f.do("GET", "/v1/projects/alpha/items/"+res.Keys[key], f.agent.Token, "").ok(t, 200, &it)
		if it["on_expiry"] != want {
			t.Errorf("%s: on_expiry %v, want %v", key, it["on_expiry"], want)
		}
	}
	p := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token,
		`{"items": [{"key": "x", "title": "X", "line": 7, "on_expiry": "later"}]}`).problem(t, 400, "invalid_argument")
	if d, _ := p["detail"].(string); !strings.Contains(d, "line 7") || !strings.Contains(d, "on_expiry") {
		t.Errorf("detail %q does not name the line and on_expiry", d)
	}
}

// TestItemPlanKey: an item imported from a plan shows its plan key
// (plan_key), so that a person reading an item can find its line in the
// plan file; an item created alone has none (null).
func TestItemPlanKey(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	var res struct {
		Keys map[string]string `json:"keys"`
	}
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token,
		`{"items": [{"key": "deploy", "title": "Deploy", "children": [{"key": "build", "title": "Build"}]}]}`).ok(t, 201, &res)
	for _, key := range []string{"deploy", "build"} {
		var it map[string]any
		f.do("GET", "/v1/projects/alpha/items/"+res.Keys[key], f.agent.Token, "").ok(t, 200, &it)
		if it["plan_key"] != key {
			t.Errorf("%s: plan_key %v", key, it["plan_key"])
		}
	}
	var alone map[string]any
	f.do("POST", "/v1/projects/alpha/items", f.agent.Token, `{"title": "alone"}`).ok(t, 201, &alone)
	if v, ok := alone["plan_key"]; !ok || v != nil {
		t.Errorf("an item created alone: plan_key %v (present %v), want null", v, ok)
	}
}
