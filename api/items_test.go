package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/server"
)

// item is the contract's item JSON.
type item struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	Priority  int      `json:"priority"`
	ParentID  *string  `json:"parent_id"`
	Labels    []string `json:"labels"`
	Requires  []string `json:"requires"`
	Touches   []string `json:"touches"`
	State     string   `json:"state"`
	Epoch     int64    `json:"epoch"`
	Version   int      `json:"version"`
	BlockedBy struct {
		Dependencies []struct{ ID, Title, State string }
		Children     []struct{ ID, Title, State string }
		Attention    []struct{ ID, Question string }
	} `json:"blocked_by"`
	PreviousWorker *string        `json:"previous_worker"`
	Result         any            `json:"result"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
	Raw            map[string]any `json:"-"`
}

// itemFixture is a server with two projects and tokens of every role.
type itemFixture struct {
	*env
	human, agent, otherHuman token
}

// itemSetup boots a server (tune adjusts its config, as for setup) with
// the projects alpha and beta, a human and an agent token in alpha and a
// human token in beta.
func itemSetup(t testing.TB, tune ...func(*server.Config)) itemFixture {
	t.Helper()
	e := setup(t, tune...)
	e.mustProject("alpha")
	e.mustProject("beta")
	return itemFixture{
		env:        e,
		human:      e.mustToken("alpha", "ann", "human"),
		agent:      e.mustToken("alpha", "bot", "agent"),
		otherHuman: e.mustToken("beta", "bea", "human"),
	}
}

func (f itemFixture) mustItem(tok string, body map[string]any) item {
	f.t.Helper()
	var it item
	f.do("POST", "/v1/projects/alpha/items", tok, body).ok(f.t, 201, &it)
	return it
}

func TestItems(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)

	t.Run("CreateShape", func(t *testing.T) {
		var raw map[string]any
		f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "shape", "labels": []string{"go"}, "priority": 3}).ok(t, 201, &raw)
		for _, k := range []string{"id", "title", "body", "priority", "parent_id", "labels", "state", "epoch", "blocked_by", "previous_worker", "result", "created_at", "updated_at"} {
			if _, ok := raw[k]; !ok {
				t.Fatalf("item lacks %q: %v", k, raw)
			}
		}
		bb := raw["blocked_by"].(map[string]any)
		for _, k := range []string{"dependencies", "children", "attention"} {
			if _, ok := bb[k].([]any); !ok {
				t.Fatalf("blocked_by.%s is not a list: %v", k, bb)
			}
		}
		if raw["state"] != "ready" || raw["epoch"].(float64) != 0 {
			t.Fatalf("new item %v", raw)
		}
	})
	a := f.mustItem(f.human.Token, map[string]any{"title": "A", "priority": 1})
	b := f.mustItem(f.agent.Token, map[string]any{"title": "B", "body": "do **B**", "depends_on": []string{a.ID}, "labels": []string{"x"}})
	t.Run("DependsOn", func(t *testing.T) {
		if b.State != "blocked" || len(b.BlockedBy.Dependencies) != 1 || b.BlockedBy.Dependencies[0].ID != a.ID {
			t.Fatalf("b %+v", b)
		}
	})
	t.Run("Get", func(t *testing.T) {
		var got item
		r := f.do("GET", "/v1/projects/alpha/items/"+b.ID, f.agent.Token, nil)
		r.ok(t, 200, &got)
		if got.ID != b.ID || got.Body != "do **B**" || got.Labels[0] != "x" {
			t.Fatalf("got %+v", got)
		}
		if r.header.Get("ETag") == "" {
			t.Fatal("no ETag")
		}
		// By project id too.
		var p project
		f.do("GET", "/v1/projects/alpha", f.agent.Token, nil).ok(t, 200, &p)
		f.do("GET", "/v1/projects/"+p.ID+"/items/"+b.ID, f.agent.Token, nil).ok(t, 200, nil)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f.do("GET", "/v1/projects/alpha/items/00000000-0000-0000-0000-000000000001", f.agent.Token, nil).problem(t, 404, "not_found")
		f.do("GET", "/v1/projects/alpha/items/nope", f.agent.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("ErrOtherProject", func(t *testing.T) {
		f.do("GET", "/v1/projects/alpha/items/"+b.ID, f.otherHuman.Token, nil).problem(t, 404, "not_found")
		f.do("GET", "/v1/projects/beta/items/"+b.ID, f.otherHuman.Token, nil).problem(t, 404, "not_found")
		f.do("POST", "/v1/projects/alpha/items", f.otherHuman.Token, map[string]any{"title": "x"}).problem(t, 404, "not_found")
		f.do("PATCH", "/v1/projects/alpha/items/"+b.ID, f.otherHuman.Token, map[string]any{"title": "x"}).problem(t, 404, "not_found")
		f.do("POST", "/v1/projects/alpha/items/"+b.ID+"/cancel", f.otherHuman.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("List", func(t *testing.T) {
		var page struct {
			Items      []item
			NextCursor *string `json:"next_cursor"`
		}
		f.do("GET", "/v1/projects/alpha/items?state=blocked", f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 1 || page.Items[0].ID != b.ID || page.NextCursor != nil {
			t.Fatalf("blocked page %+v", page)
		}
		f.do("GET", "/v1/projects/alpha/items?label=x", f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 1 || page.Items[0].ID != b.ID {
			t.Fatalf("label page %+v", page)
		}
		// Pagination: three items, two per page.
		f.do("GET", "/v1/projects/alpha/items?limit=2", f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 2 || page.NextCursor == nil {
			t.Fatalf("first page %+v", page)
		}
		seen := map[string]bool{page.Items[0].ID: true, page.Items[1].ID: true}
		f.do("GET", "/v1/projects/alpha/items?limit=2&cursor="+*page.NextCursor, f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 1 || seen[page.Items[0].ID] || page.NextCursor != nil {
			t.Fatalf("second page %+v", page)
		}
	})
	t.Run("ErrList", func(t *testing.T) {
		for q, fld := range map[string]string{
			"limit=0": "limit", "limit=501": "limit", "limit=x": "limit", "state=sleeping": "state",
			"parent_id=zz": "parent_id", "cursor=garbage": "cursor", "sort=title": "sort",
		} {
			field(t, f.do("GET", "/v1/projects/alpha/items?"+q, f.agent.Token, nil).problem(t, 400, "invalid_argument"), fld)
		}
	})
	t.Run("Patch", func(t *testing.T) {
		var got item
		r := f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.human.Token, map[string]any{"title": "A2", "priority": 9, "labels": []string{"y"}})
		r.ok(t, 200, &got)
		if got.Title != "A2" || got.Priority != 9 || got.Labels[0] != "y" || got.Version != a.Version+1 {
			t.Fatalf("patched %+v", got)
		}
		// A stale If-Match is refused and changes nothing.
		f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.human.Token, map[string]any{"title": "A3"}, withHeader("If-Match", `"1"`)).problem(t, 409, "conflict")
		f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.human.Token, map[string]any{"title": "A3"}, withHeader("If-Match", r.header.Get("ETag"))).ok(t, 200, nil)
	})
	t.Run("ErrPatchAgent", func(t *testing.T) {
		f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.agent.Token, map[string]any{"title": "no"}).problem(t, 403, "forbidden")
	})
	t.Run("ErrPatchInvalid", func(t *testing.T) {
		for body, fld := range map[string]string{
			`{"title": ""}`:        "title",
			`{"title": 5}`:         "title",
			`{"state": "done"}`:    "state",
			`{"epoch": 7}`:         "epoch",
			`{"priority": "high"}`: "priority",
			`{"labels": "x"}`:      "labels",
			`{"labels": ["A B"]}`:  "labels",
			`{"project_id": "x"}`:  "project_id",
		} {
			field(t, f.do("PATCH", "/v1/projects/alpha/items/"+a.ID, f.human.Token, body).problem(t, 400, "invalid_argument"), fld)
		}
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+a.ID, f.human.Token, nil).ok(t, 200, &got)
		if got.Title != "A3" {
			t.Fatalf("refused patches changed the item: %+v", got)
		}
	})
	t.Run("ErrCreateInvalid", func(t *testing.T) {
		before := f.count("SELECT count(*) FROM items")
		for body, fld := range map[string]string{
			`{}`:               "title",
			`{"title": "   "}`: "title",
			`{"title": "` + strings.Repeat("t", 501) + `"}`: "title",
			`{"title": "x", "state": "done"}`:               "state",
			`{"title": "x", "epoch": 3}`:                    "epoch",
			`{"title": "x", "id": "` + a.ID + `"}`:          "id",
			`{"title": "x", "priority": "high"}`:            "priority",
			`{"title": "x", "priority": 1.5}`:               "priority",
			`{"title": "x", "priority": 99999999999}`:       "priority",
			`{"title": "x", "parent_id": "nope"}`:           "parent_id",
			`{"title": "x", "depends_on": ["nope"]}`:        "depends_on",
			`{"title": "x", "depends_on": "` + a.ID + `"}`:  "depends_on",
			`{"title": "x", "labels": [1]}`:                 "labels[0]",
			`{"title": "x", "metadata": [1]}`:               "metadata",
		} {
			field(t, f.do("POST", "/v1/projects/alpha/items", f.agent.Token, body).problem(t, 400, "invalid_argument"), fld)
		}
		// A missing prerequisite or parent names its field, as a malformed
		// one does.
		field(t, f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "x", "depends_on": []string{"00000000-0000-0000-0000-000000000001"}}).problem(t, 404, "not_found"), "depends_on")
		field(t, f.do("POST", "/v1/projects/alpha/items", f.agent.Token, map[string]any{"title": "x", "parent_id": "00000000-0000-0000-0000-000000000001"}).problem(t, 404, "not_found"), "parent_id")
		if n := f.count("SELECT count(*) FROM items"); n != before {
			t.Fatalf("refused creates stored items: %d -> %d", before, n)
		}
	})
	t.Run("Children", func(t *testing.T) {
		parent := f.mustItem(f.human.Token, map[string]any{"title": "epic"})
		child := f.mustItem(f.agent.Token, map[string]any{"title": "part", "parent_id": parent.ID})
		if child.ParentID == nil || *child.ParentID != parent.ID {
			t.Fatalf("child %+v", child)
		}
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+parent.ID, f.agent.Token, nil).ok(t, 200, &got)
		if got.State != "blocked" || len(got.BlockedBy.Children) != 1 {
			t.Fatalf("parent %+v", got)
		}
		var page struct{ Items []item }
		f.do("GET", "/v1/projects/alpha/items?parent_id="+parent.ID, f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Items) != 1 || page.Items[0].ID != child.ID {
			t.Fatalf("children %+v", page)
		}
	})
	t.Run("Graph", func(t *testing.T) {
		var g struct {
			Item         item
			Dependencies []struct{ ID string }
			Dependents   []struct{ ID string }
			CriticalPath []struct{ ID string } `json:"critical_path"`
		}
		f.do("GET", "/v1/projects/alpha/items/"+b.ID+"/graph", f.agent.Token, nil).ok(t, 200, &g)
		if g.Item.ID != b.ID || len(g.Dependencies) != 1 || g.Dependencies[0].ID != a.ID || len(g.CriticalPath) != 2 || g.CriticalPath[1].ID != b.ID {
			t.Fatalf("graph %+v", g)
		}
		var sg struct {
			Nodes []struct{ ID string }
			Edges []struct{ From, To, Kind string }
		}
		f.do("GET", "/v1/projects/alpha/graph?around="+b.ID, f.agent.Token, nil).ok(t, 200, &sg)
		if len(sg.Nodes) < 2 || len(sg.Edges) < 1 {
			t.Fatalf("subgraph %+v", sg)
		}
		field(t, f.do("GET", "/v1/projects/alpha/graph?limit=0", f.agent.Token, nil).problem(t, 400, "invalid_argument"), "limit")
		// An item to centre on that is not the project's names the
		// parameter, as a missing parent or prerequisite names its field.
		field(t, f.do("GET", "/v1/projects/alpha/graph?around=00000000-0000-0000-0000-000000000001", f.agent.Token, nil).problem(t, 404, "not_found"), "around")
	})
	t.Run("Cancel", func(t *testing.T) {
		c := f.mustItem(f.agent.Token, map[string]any{"title": "to cancel"})
		f.do("POST", "/v1/projects/alpha/items/"+c.ID+"/cancel", f.agent.Token, nil).problem(t, 403, "forbidden")
		var got item
		f.do("POST", "/v1/projects/alpha/items/"+c.ID+"/cancel", f.human.Token, map[string]any{"reason": "not needed"}).ok(t, 200, &got)
		if got.State != "cancelled" {
			t.Fatalf("cancelled %+v", got)
		}
		f.do("POST", "/v1/projects/alpha/items/"+c.ID+"/cancel", f.human.Token, nil).problem(t, 409, "conflict")
		field(t, f.do("POST", "/v1/projects/alpha/items/"+c.ID+"/cancel", f.human.Token, `{"why": 1}`).problem(t, 400, "invalid_argument"), "why")
	})
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	a := f.mustItem(f.agent.Token, map[string]any{"title": "A"})
	b := f.mustItem(f.agent.Token, map[string]any{"title": "B"})
	c := f.mustItem(f.agent.Token, map[string]any{"title": "C"})
	dep := func(tok, from, to string) resp {
		return f.do("POST", "/v1/projects/alpha/items/"+from+"/dependencies", tok, map[string]any{"depends_on": to})
	}

	t.Run("OK", func(t *testing.T) {
		var out struct {
			ItemID    string `json:"item_id"`
			DependsOn string `json:"depends_on"`
			Item      item
		}
		dep(f.agent.Token, b.ID, a.ID).ok(t, 201, &out)
		if out.ItemID != b.ID || out.DependsOn != a.ID || out.Item.State != "blocked" {
			t.Fatalf("dependency %+v", out)
		}
		dep(f.human.Token, c.ID, b.ID).ok(t, 201, nil)
	})
	t.Run("ErrCycle", func(t *testing.T) {
		p := dep(f.agent.Token, a.ID, c.ID).problem(t, 409, "dependency_cycle")
		cycle, ok := p["cycle"].([]any)
		if !ok || len(cycle) < 3 {
			t.Fatalf("problem does not name the cycle: %v", p)
		}
		if n := f.count("SELECT count(*) FROM dependencies WHERE item_id = $1", a.ID); n != 0 {
			t.Fatal("the cycle edge was stored")
		}
	})
	t.Run("ErrSelfCycle", func(t *testing.T) {
		p := dep(f.agent.Token, a.ID, a.ID).problem(t, 409, "dependency_cycle")
		if cycle, ok := p["cycle"].([]any); !ok || len(cycle) != 2 || cycle[0] != a.ID || cycle[1] != a.ID {
			t.Fatalf("problem does not name the one-item cycle: %v", p)
		}
	})
	t.Run("ErrDuplicate", func(t *testing.T) {
		dep(f.agent.Token, b.ID, a.ID).problem(t, 409, "already_exists")
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		field(t, dep(f.agent.Token, a.ID, "nope").problem(t, 400, "invalid_argument"), "depends_on")
		field(t, f.do("POST", "/v1/projects/alpha/items/"+a.ID+"/dependencies", f.agent.Token, `{}`).problem(t, 400, "invalid_argument"), "depends_on")
		dep(f.agent.Token, a.ID, "00000000-0000-0000-0000-000000000001").problem(t, 404, "not_found")
		dep(f.otherHuman.Token, a.ID, b.ID).problem(t, 404, "not_found")
	})
	t.Run("Delete", func(t *testing.T) {
		f.do("DELETE", "/v1/projects/alpha/items/"+b.ID+"/dependencies/"+a.ID, f.agent.Token, nil).problem(t, 403, "forbidden")
		f.do("DELETE", "/v1/projects/alpha/items/"+b.ID+"/dependencies/"+a.ID, f.human.Token, nil).ok(t, 204, nil)
		var got item
		f.do("GET", "/v1/projects/alpha/items/"+b.ID, f.human.Token, nil).ok(t, 200, &got)
		if got.State != "ready" {
			t.Fatalf("b after removal %+v", got)
		}
		f.do("DELETE", "/v1/projects/alpha/items/"+b.ID+"/dependencies/"+a.ID, f.human.Token, nil).problem(t, 404, "not_found")
	})
}

func TestPlans(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	existing := f.mustItem(f.human.Token, map[string]any{"title": "already there"})
	plan := map[string]any{"items": []any{
		map[string]any{"key": "design", "title": "Design", "depends_on": []string{existing.ID}},
		map[string]any{"key": "build", "title": "Build", "depends_on": []string{"design"}, "children": []any{
			map[string]any{"key": "api", "title": "API"},
			map[string]any{"key": "ui", "title": "UI", "depends_on": []string{"api"}},
		}},
	}}
	type result struct {
		Items []struct{ ID, Title, State string }
		Keys  map[string]string
	}
	t.Run("DryRun", func(t *testing.T) {
		dry := map[string]any{"items": plan["items"], "dry_run": true}
		var r result
		f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, dry).ok(t, 200, &r)
		if len(r.Items) != 4 || len(r.Keys) != 4 {
			t.Fatalf("dry run %+v", r)
		}
		if n := f.count("SELECT count(*) FROM items"); n != 1 {
			t.Fatalf("dry run stored items: %d", n)
		}
	})
	t.Run("OK", func(t *testing.T) {
		var r result
		f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, plan).ok(t, 201, &r)
		if len(r.Items) != 4 || r.Keys["ui"] == "" {
			t.Fatalf("plan %+v", r)
		}
		var ui item
		f.do("GET", "/v1/projects/alpha/items/"+r.Keys["ui"], f.agent.Token, nil).ok(t, 200, &ui)
		if ui.ParentID == nil || *ui.ParentID != r.Keys["build"] || ui.State != "blocked" {
			t.Fatalf("ui %+v", ui)
		}
	})
	t.Run("ErrCycle", func(t *testing.T) {
		before := f.count("SELECT count(*) FROM items")
		cyclic := map[string]any{"items": []any{
			map[string]any{"key": "a", "title": "A", "depends_on": []string{"b"}},
			map[string]any{"key": "b", "title": "B", "depends_on": []string{"a"}},
		}}
		// A plan's cycle is named by its keys: the ids it would have had were
		// never stored, so they are not given.
		cp := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, cyclic).problem(t, 409, "dependency_cycle")
		if keys, _ := json.Marshal(cp["keys"]); string(keys) != `["a","b","a"]` || cp["cycle"] != nil {
			t.Fatalf("cycle problem %v: want keys [a b a] and no ids", cp)
		}
		// An item naming its own key is the one-item cycle, as an item
		// depending on itself and a decomposition's child naming its own
		// key are.
		self := map[string]any{"items": []any{map[string]any{"key": "a", "title": "A", "depends_on": []string{"a"}}}}
		sp := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, self).problem(t, 409, "dependency_cycle")
		if keys, _ := json.Marshal(sp["keys"]); string(keys) != `["a","a"]` {
			t.Fatalf("self-dependency problem %v: want keys [a a]", sp)
		}
		// Without source lines the problem names the key, and no line 0.
		unknown := map[string]any{"items": []any{map[string]any{"key": "a", "title": "A", "depends_on": []string{"zzz"}}}}
		up := f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, unknown).problem(t, 400, "invalid_argument")
		if _, hasLine := up["line"]; hasLine || up["key"] != "a" {
			t.Fatalf("unknown-key problem %v: want key a and no line", up)
		}
		field(t, f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, map[string]any{"items": []any{}}).problem(t, 400, "invalid_argument"), "items")
		field(t, f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, `{"items": [{"key": "a"}]}`).problem(t, 400, "invalid_argument"), "items[0].title")
		field(t, f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, `{"items": [{"key": "a", "title": "A", "state": "done"}]}`).problem(t, 400, "invalid_argument"), "items[0].state")
		if n := f.count("SELECT count(*) FROM items"); n != before {
			t.Fatalf("refused plans stored items: %d -> %d", before, n)
		}
		f.do("POST", "/v1/projects/alpha/plans", f.otherHuman.Token, plan).problem(t, 404, "not_found")
	})
}

// TestPlanDiffers: a re-import names every plan field in which an item
// left alone differs from the plan: requires, touches, on_expiry and
// depends_on too, and the answer matches the OpenAPI document (which
// listed only title, body, priority, labels and parent). The same plan
// again differs in nothing.
func TestPlanDiffers(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	first := map[string]any{"items": []any{
		map[string]any{"key": "d", "title": "D"},
		map[string]any{"key": "e", "title": "E"},
		map[string]any{"key": "k", "title": "K", "requires": []string{"go"}, "touches": []string{"db:schema"},
			"on_expiry": "reconcile", "depends_on": []string{"d"}},
	}}
	type result struct {
		Existing map[string]struct {
			ID      string
			Differs []string
		}
	}
	var r result
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, first).ok(t, 201, &r)
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, first).ok(t, 201, &r)
	for k, ex := range r.Existing {
		if len(ex.Differs) != 0 {
			t.Errorf("the same plan again: %s differs in %v", k, ex.Differs)
		}
	}
	again := map[string]any{"items": []any{
		map[string]any{"key": "d", "title": "D"},
		map[string]any{"key": "e", "title": "E"},
		map[string]any{"key": "k", "title": "K", "on_expiry": "retry", "depends_on": []string{"e"}},
	}}
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, again).ok(t, 201, &r)
	got := r.Existing["k"].Differs
	slices.Sort(got)
	if fmt.Sprint(got) != "[depends_on on_expiry requires touches]" {
		t.Errorf("k differs in %v, want depends_on, on_expiry, requires, touches", got)
	}
	// The project's default (no on_expiry) differs from a stored reconcile.
	noExpiry := map[string]any{"items": []any{map[string]any{"key": "d", "title": "D"}, map[string]any{"key": "k", "title": "K", "requires": []string{"go"},
		"touches": []string{"db:schema"}, "depends_on": []string{"d"}}}}
	f.do("POST", "/v1/projects/alpha/plans", f.agent.Token, noExpiry).ok(t, 201, &r)
	if got := r.Existing["k"].Differs; fmt.Sprint(got) != "[on_expiry]" {
		t.Errorf("k without on_expiry differs in %v, want on_expiry", got)
	}
}
