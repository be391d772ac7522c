package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/graph"
)

// bigPlan writes a plan of n items in YAML: groups of 10 (an epic with 9
// children), each epic after the previous one, each child after its
// previous sibling. With cycle, the first epic also depends on the last
// one, closing a cycle through the whole plan.
func bigPlan(t *testing.T, n int, cycle bool) (path string, deps int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("items:\n")
	groups := n / 10
	for g := 0; g < groups; g++ {
		fmt.Fprintf(&b, "  - key: epic-%d\n    title: Epic %d\n    priority: %d\n", g, g, groups-g)
		switch {
		case g > 0:
			fmt.Fprintf(&b, "    depends_on: [epic-%d]\n", g-1)
			deps++
		case cycle:
			fmt.Fprintf(&b, "    depends_on: [epic-%d]\n", groups-1)
			deps++
		}
		b.WriteString("    children:\n")
		for c := 1; c < 10; c++ {
			fmt.Fprintf(&b, "      - key: task-%d-%d\n        title: Task %d of epic %d\n        labels: [e2e]\n", g, c, c, g)
			if c > 1 {
				fmt.Fprintf(&b, "        depends_on: [task-%d-%d]\n", g, c-1)
				deps++
			}
		}
	}
	path = filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, deps
}

func TestImport(t *testing.T) {
	t.Parallel()
	t.Run("OK1000Items", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		plan, deps := bigPlan(t, 1000, false)
		r := e.run(e.agentToken, nil, "import", plan, "--json")
		if r.code != 0 {
			t.Fatalf("import: %v", r)
		}
		var res client.PlanResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Keys) != 1000 {
			t.Fatalf("import --json: %d keys (%v)", len(res.Keys), err)
		}
		if n := e.countItems(); n != 1000 {
			t.Fatalf("%d items stored, want 1000", n)
		}
		var storedDeps, children int
		ctx := context.Background()
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM dependencies").Scan(&storedDeps); err != nil {
			t.Fatal(err)
		}
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM items WHERE parent_id IS NOT NULL").Scan(&children); err != nil {
			t.Fatal(err)
		}
		if storedDeps != deps || children != 900 {
			t.Fatalf("stored %d dependencies and %d children, want %d and 900", storedDeps, children, deps)
		}
		// The first task of each epic is ready (an epic's dependencies gate
		// the epic, not its children); every other item waits.
		var ready int
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM items WHERE ready").Scan(&ready); err != nil {
			t.Fatal(err)
		}
		first, err := e.agent.GetItem(ctx, e.project, res.Keys["task-42-1"])
		if err != nil {
			t.Fatal(err)
		}
		if ready != 100 || first.State != client.StateReady {
			t.Fatalf("%d ready items (want 100); task-42-1 is %s", ready, first.State)
		}
	})
	t.Run("ErrCycleLeavesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		plan, _ := bigPlan(t, 1000, true)
		r := e.run(e.agentToken, nil, "import", plan)
		if r.code != 2 {
			t.Fatalf("import of a cyclic plan: %v", r)
		}
		for _, want := range []string{"dependency cycle", "epic-0 (line 2)", "epic-99 (line", "nothing was sent"} {
			if !strings.Contains(r.stderr, want) {
				t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
		if n := e.countItems(); n != 0 {
			t.Fatalf("%d items stored after a refused plan", n)
		}
	})
	t.Run("ErrCycleRefusedByServerAtomically", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		// Sent without the CLI's own check: the server refuses the whole plan.
		items := make([]client.PlanItem, 1000)
		for i := range items {
			items[i] = client.PlanItem{Key: fmt.Sprint("k", i), Title: fmt.Sprint("item ", i), DependsOn: []string{fmt.Sprint("k", (i+1)%1000)}}
		}
		_, err := e.agent.ImportPlan(context.Background(), e.project, client.PlanRequest{Items: items})
		if !errors.Is(err, client.ErrDependencyCycle) {
			t.Fatalf("err = %v, want dependency_cycle", err)
		}
		if n := e.countItems(); n != 0 {
			t.Fatalf("%d items stored after a refused plan", n)
		}
	})
	t.Run("ErrUnknownKeyLine", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		path := filepath.Join(t.TempDir(), "plan.json")
		os.WriteFile(path, []byte("{\"items\": [\n  {\"key\": \"a\", \"title\": \"A\"},\n  {\"key\": \"b\", \"title\": \"B\",\n   \"depends_on\": [\"a\", \"nope\"]}\n]}\n"), 0o600)
		r := e.run(e.agentToken, nil, "import", path)
		if r.code != 2 || !strings.Contains(r.stderr, path+`:4: item "b" depends on unknown key "nope"`) {
			t.Fatalf("import: %v", r)
		}
		if n := e.countItems(); n != 0 {
			t.Fatalf("%d items stored", n)
		}
	})
	t.Run("OKDryRun", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		plan, _ := bigPlan(t, 20, false)
		r := e.run(e.agentToken, nil, "import", "--dry-run", plan)
		if r.code != 0 || !strings.Contains(r.stdout, "would create 20 items and 17 dependencies") ||
			!strings.Contains(r.stdout, "task-1-9") || !strings.Contains(r.stdout, "the server checked the plan") {
			t.Fatalf("import --dry-run: %v", r)
		}
		if n := e.countItems(); n != 0 {
			t.Fatalf("%d items stored by a dry run", n)
		}
	})
}

// TestReimport: keys make a re-import idempotent. The same file imported
// twice creates nothing the second time; a dry run says which items exist
// and whether they differ; a plan that adds an item below an existing one
// creates only that item.
func TestReimport(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = `items:
  - key: schema
    title: Write the migration
  - key: api
    title: Add the endpoint
    depends_on: [schema]
    children:
      - key: api-tests
        title: Tests for the endpoint
`
	plan := write("plan.yaml", base)
	snapshot := func() string {
		var s string
		err := e.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(
			concat_ws('|', id, title, body, priority, labels, parent_id, status, unmet_dependencies, open_children, version, updated_at), ',' ORDER BY seq), '')
			|| (SELECT count(*) FROM dependencies)::text FROM items`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if r := e.run(e.agentToken, nil, "import", plan); r.code != 0 {
		t.Fatalf("first import: %v", r)
	}
	before := snapshot()

	t.Run("OKSameFileChangesNothing", func(t *testing.T) {
		r := e.run(e.agentToken, nil, "import", plan)
		if r.code != 0 {
			t.Fatalf("second import: %v", r)
		}
		if n := e.countItems(); n != 3 {
			t.Fatalf("%d items after a re-import, want 3", n)
		}
		if after := snapshot(); after != before {
			t.Fatalf("a re-import changed the stored items:\nbefore %s\nafter  %s", before, after)
		}
		if !strings.Contains(r.stdout, "created 0 items") || !strings.Contains(r.stdout, "3 already existed") {
			t.Fatalf("output does not say nothing was created:\n%s", r.stdout)
		}
	})

	t.Run("OKDryRunSaysWhatExists", func(t *testing.T) {
		edited := write("edited.yaml", strings.Replace(base, "title: Add the endpoint", "title: Add the endpoint (v2)", 1)+
			"      - key: api-docs\n        title: Document the endpoint\n")
		r := e.run(e.agentToken, nil, "import", edited, "--dry-run")
		if r.code != 0 {
			t.Fatalf("dry run: %v", r)
		}
		for _, want := range []string{
			"would create 1 item and 0 dependencies in project",
			"schema", "exists, unchanged: left alone",
			"exists, differs in title: left alone",
			"api-docs", "create",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("dry run output lacks %q:\n%s", want, r.stdout)
			}
		}
		if after := snapshot(); after != before {
			t.Fatalf("a dry run changed the stored items")
		}

		r = e.run(e.agentToken, nil, "import", edited, "--json")
		if r.code != 0 {
			t.Fatalf("import of the edited plan: %v", r)
		}
		var res client.PlanResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 || len(res.Existing) != 3 || len(res.Existing["api"].Differs) != 1 {
			t.Fatalf("result: %d new items, existing %v", len(res.Items), res.Existing)
		}
		if n := e.countItems(); n != 4 {
			t.Fatalf("%d items, want 4", n)
		}
		api := e.get(res.Keys["api"])
		if api.Title != "Add the endpoint" {
			t.Fatalf("the existing item was updated: title %q", api.Title)
		}
		docs := e.get(res.Keys["api-docs"])
		if docs.ParentID == nil || *docs.ParentID != res.Keys["api"] {
			t.Fatalf("the new item is not below its existing parent: %+v", docs)
		}
		var openChildren int
		if err := e.pool.QueryRow(context.Background(), "SELECT open_children FROM items WHERE id = $1", res.Keys["api"]).Scan(&openChildren); err != nil {
			t.Fatal(err)
		}
		if openChildren != 2 {
			t.Fatalf("the existing parent counts %d open children, want 2", openChildren)
		}
	})

	t.Run("OKImportSaysWhichDiffer", func(t *testing.T) {
		// A real import (not a dry run) of a plan whose items exist, one of
		// them with another title: each line says what became of its item,
		// and the one that differs says in what and that it was left alone.
		edited := write("edited-again.yaml", strings.Replace(base, "title: Add the endpoint", "title: Add the endpoint (v3)", 1))
		r := e.run(e.agentToken, nil, "import", edited)
		if r.code != 0 {
			t.Fatalf("import: %v", r)
		}
		for _, want := range []string{
			"existed, unchanged", "existed, differs in title: left alone",
			"1 existing item differs from the plan and was left as it is",
			"workgraph items edit",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("import output lacks %q:\n%s", want, r.stdout)
			}
		}
		var title string
		if err := e.pool.QueryRow(context.Background(), "SELECT title FROM items WHERE plan_key = 'api'").Scan(&title); err != nil {
			t.Fatal(err)
		}
		if title != "Add the endpoint" {
			t.Fatalf("the import changed the existing item's title to %q", title)
		}
	})

	t.Run("OKCountsInTheSingular", func(t *testing.T) {
		solo := write("solo.yaml", "items:\n  - key: solo\n    title: One thing\n  - key: after\n    title: After it\n    depends_on: [solo]\n")
		for _, c := range []struct{ args, want []string }{
			{[]string{"--dry-run"}, []string{"would create 2 items and 1 dependency in project"}},
			{nil, []string{"created 2 items and 1 dependency in project"}},
			{nil, []string{"created 0 items and 0 dependencies in project", "2 already existed (same key) and were left alone"}},
		} {
			r := e.run(e.agentToken, nil, append([]string{"import", solo}, c.args...)...)
			if r.code != 0 {
				t.Fatalf("import %v: %v", c.args, r)
			}
			for _, want := range c.want {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("import %v: output lacks %q:\n%s", c.args, want, r.stdout)
				}
			}
		}
		one := write("one.yaml", "items:\n  - key: solo\n    title: One thing\n")
		r := e.run(e.agentToken, nil, "import", one)
		if r.code != 0 || !strings.Contains(r.stdout, "1 already existed (same key) and was left alone") {
			t.Errorf("re-import of one item: %v", r)
		}
		r = e.run(e.agentToken, nil, "import", one, "--dry-run")
		if r.code != 0 || !strings.Contains(r.stdout, "1 exists already and would be left alone") {
			t.Errorf("dry run of one existing item: %v", r)
		}
	})
}

// TestImportSyntaxLines: a .json plan is parsed as JSON (YAML would accept
// a trailing comma), and a syntax error names its real line: the line and
// column of a JSON fault, the line of a tab in a YAML plan's indentation.
func TestImportSyntaxLines(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	cases := []struct{ name, file, text, want string }{
		{"ErrJSONTrailingComma", "plan.json", "{\"items\": [\n  {\"key\": \"a\", \"title\": \"A\"},\n]}\n", "plan.json:3: column 1: JSON syntax"},
		{"ErrYAMLTab", "plan.yaml", "items:\n  - key: a\n\ttitle: A\n", "plan.yaml:3: syntax: a tab in the indentation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if r := e.run(e.agentToken, nil, "import", path); r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("want exit 2 and %q\n%v", c.want, r)
			}
			if n := e.countItems(); n != 0 {
				t.Fatalf("%d items stored from a broken plan", n)
			}
		})
	}
}

// TestImportTooLarge: a plan whose request is over the server's limit of
// a plan import (16 MiB) is refused before anything is sent, by --local
// too (which used to call it fine), with how to import it instead, not
// the server's advice for a big result ("store big results elsewhere").
func TestImportTooLarge(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var b strings.Builder
	b.WriteString("items:\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "  - key: k%d\n    title: Item %d\n    body: %s\n", i, i, strings.Repeat("b", 9000))
	}
	if b.Len() <= graph.MaxPlanRequestBytes {
		t.Fatalf("the plan is %d bytes, not over the limit", b.Len())
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"import", plan, "--dry-run", "--local"}, {"import", plan}} {
		r := e.run(e.agentToken, nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "more than the server accepts at once (16.0 MiB); nothing was sent") ||
			!strings.Contains(r.stderr, "Split the plan into several files") {
			t.Fatalf("workgraph %v: %v", args, r)
		}
	}
	if n := e.countItems(); n != 0 {
		t.Fatalf("%d items stored, want none", n)
	}
}

// TestImportDependsOnIDPrefix: a plan's depends_on may name an existing
// item by the first characters of its id, as tables show them, like every
// other place a person types an id: one item has them, and the new item
// waits for it; several or none, and the plan is refused at that line,
// nothing created. A key of the plan that looks like hex is still the key.
func TestImportDependsOnIDPrefix(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := e.item("Write the migration")
	e.setID(schema, "5eed0001-0000-4000-8000-000000000001")
	a, b := e.item("Add the endpoint"), e.item("Add the page")
	e.setID(a, "abcd1234-0000-4000-8000-000000000001")
	e.setID(b, "abcd1234-9999-4000-8000-000000000002")

	t.Run("ErrAmbiguousOrUnknown", func(t *testing.T) {
		plan := write("bad.yaml", "items:\n  - key: api\n    title: The API\n    depends_on: [abcd1234]\n  - key: docs\n    title: The docs\n    depends_on:\n      - ffff0000\n")
		r := e.wantExit(e.agentToken, 2, "bad.yaml:4:", "import", plan)
		for _, want := range []string{`"abcd1234"`, a.ID, b.ID, "bad.yaml:8:", `"ffff0000"`, "no item id"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the refusal lacks %q:\n%s", want, r.stderr)
			}
		}
		if n := e.countItems(); n != 3 {
			t.Fatalf("%d items after a refused import, want 3", n)
		}
		r = e.wantExit(e.agentToken, 2, "bad.yaml:4:", "import", plan, "--dry-run", "--local")
		if !strings.Contains(r.stderr, "without --local") {
			t.Errorf("--local does not say the prefix is looked up without it:\n%s", r.stderr)
		}
	})

	t.Run("OK", func(t *testing.T) {
		plan := write("plan.yaml", "items:\n  - key: beef\n    title: Hex-looking key\n  - key: api\n    title: The API\n    depends_on: [5eed0001, beef, abcd1234-9999]\n")
		r := e.run(e.agentToken, nil, "import", plan, "--dry-run")
		if r.code != 0 || !strings.Contains(r.stdout, schema.ID) {
			t.Fatalf("dry run: %v", r)
		}
		var res client.PlanResult
		e.mustJSON(e.agentToken, &res, "import", plan)
		api := e.get(res.Keys["api"])
		if api.State != client.StateBlocked {
			t.Fatalf("the new item is %s, want blocked", api.State)
		}
		var deps []string
		rows, err := e.pool.Query(context.Background(), `SELECT depends_on_id::text FROM dependencies WHERE item_id = $1 ORDER BY 1`, res.Keys["api"])
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				t.Fatal(err)
			}
			deps = append(deps, d)
		}
		if want := []string{schema.ID, b.ID, res.Keys["beef"]}; !sameSet(deps, want) {
			t.Fatalf("the new item depends on %v, want %v", deps, want)
		}
	})
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestImportServerFaultNamesFileAndLine: a fault only the server finds (a
// depends_on naming the whole id of no item of the project) is reported
// as the faults the CLI finds itself are: the file and the line of the
// entry, nothing created.
func TestImportServerFaultNamesFileAndLine(t *testing.T) {
	t.Parallel()
	e := setup(t)
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	src := "items:\n  - key: api\n    title: The API\n    depends_on:\n      - 00000000-0000-4000-8000-000000000000\n"
	if err := os.WriteFile(plan, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.wantExit(e.agentToken, 2, "plan.yaml:5: ", "import", plan)
	if !strings.Contains(r.stderr, "neither a key of the plan nor an item of the project") {
		t.Errorf("the refusal lacks the server's reason:\n%s", r.stderr)
	}
	if n := e.countItems(); n != 0 {
		t.Fatalf("%d items after a refused import, want 0", n)
	}
}
