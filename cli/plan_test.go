package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/workgraph-dev/workgraph/client"
)

// mustPlanError parses src and returns its faults, failing when it parses.
func mustPlanError(t *testing.T, src string) *planErrors {
	t.Helper()
	_, err := parsePlan("plan.yaml", []byte(src), planOptions{})
	var pe *planErrors
	if !errors.As(err, &pe) {
		t.Fatalf("parsePlan: err = %v, want *planErrors", err)
	}
	return pe
}

func wantFault(t *testing.T, pe *planErrors, line int, substr string) {
	t.Helper()
	for _, f := range pe.List {
		if f.Line == line && strings.Contains(f.Msg, substr) {
			return
		}
	}
	t.Fatalf("no fault at line %d containing %q in:\n%v", line, substr, pe)
}

func TestParsePlan(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		src := `items:
  - key: schema
    title: Write the migration
    priority: 5
    labels: [db, backend]
  - key: api
    title: Add the endpoint
    depends_on: [schema]
    children:
      - key: api-tests
        title: Tests
        depends_on: schema
`
		p, err := parsePlan("plan.yaml", []byte(src), planOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.All) != 3 || len(p.Roots) != 2 || p.dependencyCount() != 2 {
			t.Fatalf("parsed %d items, %d roots, %d deps", len(p.All), len(p.Roots), p.dependencyCount())
		}
		req := p.request(false)
		if got := req.Items[1].Children[0]; got.Key != "api-tests" || got.DependsOn[0] != "schema" {
			t.Fatalf("child = %+v", got)
		}
		if *req.Items[0].Priority != 5 || len(req.Items[0].Labels) != 2 {
			t.Fatalf("item 0 = %+v", req.Items[0])
		}
		if p.lineOf("api-tests") != 10 {
			t.Fatalf("line of api-tests = %d, want 10", p.lineOf("api-tests"))
		}
	})
	t.Run("OKJSONWithTabs", func(t *testing.T) {
		t.Parallel()
		src := "{\n\t\"items\": [\n\t\t{\"key\": \"a\", \"title\": \"A\"},\n\t\t{\"key\": \"b\", \"title\": \"B\", \"depends_on\": [\"a\"]}\n\t]\n}\n"
		p, err := parsePlan("plan.json", []byte(src), planOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.lineOf("b") != 4 {
			t.Fatalf("line of b = %d, want 4", p.lineOf("b"))
		}
	})
	t.Run("ErrJSONTypes", func(t *testing.T) {
		t.Parallel()
		// A JSON plan's values have types: a number is no title, a string
		// no priority, one string no list (YAML would take each).
		src := `{"items": [
  {"key": "a", "title": 5},
  {"key": "b", "title": "B", "priority": "5"},
  {"key": "c", "title": "C", "labels": "db"},
  {"key": "d", "title": true, "depends_on": ["a", 7]},
  {"key": "e", "title": "E", "priority": 3, "labels": ["x"], "body": null, "depends_on": ["a"]}
]}`
		_, err := parsePlan("plan.json", []byte(src), planOptions{})
		var pe *planErrors
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want the plan's faults", err)
		}
		wantFault(t, pe, 2, `title: want a string, found the number 5`)
		wantFault(t, pe, 3, `priority: want a whole number, found the string "5"`)
		wantFault(t, pe, 4, `labels: want an array of strings, found the string "db"`)
		wantFault(t, pe, 5, `title: want a string, found true`)
		wantFault(t, pe, 5, `depends_on: want an array of strings, found the number 7 in it`)
		for _, f := range pe.List {
			if f.Line == 6 {
				t.Errorf("a well-typed item is refused: %v", f)
			}
		}
		// The same values in YAML are read as YAML reads them.
		if _, err := parsePlan("plan.yaml", []byte("- key: a\n  title: 5\n  priority: \"5\"\n  labels: db\n"), planOptions{}); err != nil {
			t.Fatalf("YAML: %v", err)
		}
	})
	t.Run("OKByteOrderMarks", func(t *testing.T) {
		t.Parallel()
		// As Windows editors save them: UTF-8 or UTF-16 with a byte order
		// mark, lines ending in CRLF.
		jsonText := "{\r\n\"items\": [\r\n{\"key\": \"a\", \"title\": \"Ä\"},\r\n{\"key\": \"b\", \"title\": \"B\", \"depends_on\": [\"a\"]}\r\n]}\r\n"
		yamlText := "items:\r\n  - key: a\r\n    title: Ä\r\n  - key: b\r\n    title: B\r\n    depends_on: [a]\r\n"
		utf16 := func(s string, bigEndian bool) []byte {
			out := []byte{0xFF, 0xFE}
			if bigEndian {
				out = []byte{0xFE, 0xFF}
			}
			for _, u := range utf16.Encode([]rune(s)) {
				if bigEndian {
					out = append(out, byte(u>>8), byte(u))
				} else {
					out = append(out, byte(u), byte(u>>8))
				}
			}
			return out
		}
		for _, c := range []struct {
			name, file string
			data       []byte
			lineOfB    int
		}{
			{"UTF8JSON", "plan.json", append([]byte{0xEF, 0xBB, 0xBF}, jsonText...), 4},
			{"UTF16LEJSON", "plan.json", utf16(jsonText, false), 4},
			{"UTF16BEJSON", "plan.json", utf16(jsonText, true), 4},
			{"UTF8YAML", "plan.yaml", append([]byte{0xEF, 0xBB, 0xBF}, yamlText...), 4},
			{"UTF16LEYAML", "plan.yaml", utf16(yamlText, false), 4},
		} {
			p, err := parsePlan(c.file, c.data, planOptions{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if p.ByKey["a"].Title != "Ä" || p.lineOf("b") != c.lineOfB {
				t.Fatalf("%s: title of a %q, line of b %d, want %q and %d", c.name, p.ByKey["a"].Title, p.lineOf("b"), "Ä", c.lineOfB)
			}
		}
	})
	t.Run("OKTopLevelList", func(t *testing.T) {
		t.Parallel()
		p, err := parsePlan("plan.yaml", []byte("- key: a\n  title: A\n"), planOptions{})
		if err != nil || len(p.All) != 1 {
			t.Fatalf("p = %v, err = %v", p, err)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    title: A
  - key: b
    title: B
    depends_on:
      - a
      - zz
`)
		wantFault(t, pe, 8, `depends on unknown key "zz"`)
		// A key of another file (an earlier import) is not looked up: the
		// fault says how to name that item.
		wantFault(t, pe, 8, "an item imported from another file is named by its id or its first characters")
	})
	t.Run("ErrDuplicateKey", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    title: A
    children:
      - key: a
        title: again
`)
		wantFault(t, pe, 5, `duplicate key "a" (first defined at line 2)`)
	})
	t.Run("ErrCycle", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    title: A
    depends_on: [c]
  - key: b
    title: B
    depends_on: [a]
  - key: c
    title: C
    depends_on: [b]
`)
		if len(pe.List) != 1 {
			t.Fatalf("faults: %v", pe)
		}
		msg := pe.List[0].Msg
		for _, want := range []string{"dependency cycle", "a (line 2)", "b (line 5)", "c (line 8)"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("cycle message %q lacks %q", msg, want)
			}
		}
	})
	t.Run("ErrCycleThroughParent", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: epic
    title: Epic
    children:
      - key: part
        title: Part
        depends_on: [epic]
`)
		wantFault(t, pe, 2, "dependency cycle: epic (line 2) -> (child) part (line 5) -> epic (line 2)")
	})
	t.Run("ErrFields", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    titel: A
    priority: high
  - title: no key
`)
		wantFault(t, pe, 3, `unknown field "titel"`)
		wantFault(t, pe, 4, `priority "high": want an integer`)
		wantFault(t, pe, 2, `item "a" has no title`)
		wantFault(t, pe, 5, "item has no key")
		// What a re-import does with a key: it never updates the item.
		wantFault(t, pe, 5, "a re-import leaves the item of that key alone")
	})
	t.Run("ErrPriorityOutOfRange", func(t *testing.T) {
		// A whole number past 32 bits is an integer: say what is wrong
		// with it, the range the server answers with too.
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    title: A
    priority: 99999999999
  - key: b
    title: B
    priority: -2147483649
`)
		wantFault(t, pe, 4, `priority 99999999999: out of range, want an integer from -2147483648 to 2147483647`)
		wantFault(t, pe, 7, `priority -2147483649: out of range, want an integer from -2147483648 to 2147483647`)
	})
	t.Run("ErrInvisibleCharacters", func(t *testing.T) {
		// What the server refuses (docs/api.md, "Input is strict") is
		// refused here, with its line, so --local does not call it fine.
		t.Parallel()
		pe := mustPlanError(t, "items:\n  - key: \"a\\tb\"\n    title: \"invoice\\u202Efdp.exe\"\n    body: \"x\\e[2Jy\"\n")
		wantFault(t, pe, 2, "U+0009")
		wantFault(t, pe, 3, "U+202E")
		wantFault(t, pe, 4, "U+001B")
	})
	t.Run("ErrFieldTwice", func(t *testing.T) {
		t.Parallel()
		// A YAML parser keeps one of two equal keys: the other half of what
		// was written would be lost without a word.
		pe := mustPlanError(t, `items:
  - key: a
    title: First
    title: Second
items:
  - key: b
    title: B
`)
		wantFault(t, pe, 4, `field "title" written twice (first at line 3)`)
		wantFault(t, pe, 5, `field "items" written twice (first at line 1)`)
		_, err := parsePlan("children.yaml", []byte("items:\n  - key: a\n    title: A\nchildren:\n  - key: b\n    title: B\n"), planOptions{flat: true})
		if err == nil || !strings.Contains(err.Error(), "children.yaml:4: a second list of items") {
			t.Fatalf("items and children: err = %v", err)
		}
	})
	t.Run("ErrNullIsNoValue", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `items:
  - key: a
    title: null
  - key: ~
    title: B
  - key: c
    title: C
    body: ~
    priority: null
`)
		wantFault(t, pe, 2, `item "a" has no title`)
		wantFault(t, pe, 4, "item has no key")
		if len(pe.List) != 2 {
			t.Fatalf("faults: %v", pe)
		}
		p, err := parsePlan("plan.yaml", []byte("- key: c\n  title: C\n  body: ~\n  priority: null\n"), planOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := p.ByKey["c"]; c.Body != "" || c.Priority != nil {
			t.Fatalf("body %q, priority %v: want no body and no priority", c.Body, c.Priority)
		}
	})
	t.Run("OKAliases", func(t *testing.T) {
		t.Parallel()
		p, err := parsePlan("plan.yaml", []byte(`items:
  - key: page
    title: &t Accounts page
    labels: &web [web, ui]
    touches: &scope ["repo:web/**"]
  - key: styles
    title: Restyle
    labels: *web
    touches: *scope
    requires: [*t]
    body: *t
`), planOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := p.ByKey["styles"]
		if strings.Join(st.Labels, ",") != "web,ui" || st.Body != "Accounts page" || strings.Join(st.Touches, ",") != "repo:web/**" ||
			strings.Join(st.Requires, ",") != "Accounts page" {
			t.Fatalf("styles = %+v", st)
		}
	})
	t.Run("ErrAliasesStandForTooMany", func(t *testing.T) {
		t.Parallel()
		// Nine lines whose aliases stand for 10^8 items: refused at the
		// limit of one import, at once, not walked.
		src := "items:\n  - &a0 {key: k0, title: t}\n"
		for i := 1; i < 9; i++ {
			src += fmt.Sprintf("  - &a%d {key: k%d, title: t, children: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
		}
		done := make(chan error, 1)
		go func() { _, err := parsePlan("plan.yaml", []byte(src), planOptions{}); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "more than 50000 items") {
				t.Fatalf("err = %.300v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("parsePlan walked the aliases for 20 s")
		}
	})
	t.Run("ErrMergeKey", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, `base: &base
  labels: [web]
items:
  - key: a
    title: A
    <<: *base
`)
		wantFault(t, pe, 6, "a merge key (<<) cannot be used in a plan")
	})
	t.Run("ErrMarkdown", func(t *testing.T) {
		t.Parallel()
		for _, src := range []string{"# Plan\n\n- [ ] First thing\n- [ ] Second thing\n", "- First thing\n- Second thing\n"} {
			_, err := parsePlan("plan.md", []byte(src), planOptions{})
			if err == nil || !strings.Contains(err.Error(), "plan.md: a plan is YAML or JSON, not Markdown") {
				t.Fatalf("%q: err = %v", src, err)
			}
		}
	})
	t.Run("ErrSyntax", func(t *testing.T) {
		t.Parallel()
		pe := mustPlanError(t, "items:\n  - key: a\n    title: [unclosed\n")
		if len(pe.List) != 1 || !strings.Contains(pe.List[0].Msg, "syntax") {
			t.Fatalf("faults: %v", pe)
		}
	})
	t.Run("ErrNestedChildrenInFlatPlan", func(t *testing.T) {
		t.Parallel()
		_, err := parsePlan("children.yaml", []byte("- key: a\n  title: A\n  children:\n    - key: b\n      title: B\n"), planOptions{flat: true})
		if err == nil || !strings.Contains(err.Error(), "children.yaml:3: children cannot be nested") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParsePlanReportsEveryFault(t *testing.T) {
	t.Parallel()
	pe := mustPlanError(t, `items:
  - key: a
    title: A
  - key: b
    title: B
    depends_on: [a, c]
  - key: a
    title: dup
`)
	wantFault(t, pe, 7, `duplicate key "a" (first defined at line 2)`)
	wantFault(t, pe, 6, `unknown key "c"`)
}

// TestPlanEveryCycle: a plan with two separate cycles has both reported,
// each at its first item's line, so that one round of fixes mends the file
// (the first was reported alone, the second only after it was fixed).
func TestPlanEveryCycle(t *testing.T) {
	t.Parallel()
	pe := mustPlanError(t, `items:
  - key: a
    title: A
    depends_on: [b]
  - key: b
    title: B
    depends_on: [a]
  - key: p
    title: P
    children:
      - key: c
        title: C
        depends_on: [p]
  - key: fine
    title: Fine
    depends_on: [a]
`)
	if len(pe.List) != 2 {
		t.Fatalf("%d faults, want 2:\n%v", len(pe.List), pe)
	}
	wantFault(t, pe, 2, "dependency cycle: a (line 2) -> b (line 5) -> a (line 2)")
	wantFault(t, pe, 8, "dependency cycle: p (line 8) -> (child) c (line 11) -> p (line 8)")
}

// TestParsePlanOnExpiry: on_expiry goes with its item to the server; a
// value other than retry or reconcile is a fault at its line, and a
// decomposition (flat) cannot set it.
func TestParsePlanOnExpiry(t *testing.T) {
	t.Parallel()
	src := `items:
  - key: deploy
    title: Deploy
    on_expiry: reconcile
    children:
      - key: build
        title: Build
        on_expiry: retry
  - key: docs
    title: Docs
    on_expiry: ~
`
	p, err := parsePlan("plan.yaml", []byte(src), planOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := p.request(false)
	if got := []string{req.Items[0].OnExpiry, req.Items[0].Children[0].OnExpiry, req.Items[1].OnExpiry}; !slices.Equal(got, []string{"reconcile", "retry", ""}) {
		t.Fatalf("on_expiry sent = %q, want reconcile, retry and nothing", got)
	}

	_, err = parsePlan("plan.yaml", []byte("items:\n  - key: a\n    title: A\n    on_expiry: later\n"), planOptions{})
	if err == nil || !strings.Contains(err.Error(), "plan.yaml:4") || !strings.Contains(err.Error(), `on_expiry "later"`) {
		t.Fatalf("on_expiry later: %v, want a fault at plan.yaml:4", err)
	}
	_, err = parsePlan("children.yaml", []byte("- key: a\n  title: A\n  on_expiry: retry\n"), planOptions{flat: true})
	if err == nil || !strings.Contains(err.Error(), "on_expiry cannot be set here") {
		t.Fatalf("on_expiry in a decomposition: %v, want a fault", err)
	}
}

// TestPrintItemPlanKey: items show names the plan key of an imported item.
func TestPrintItemPlanKey(t *testing.T) {
	t.Parallel()
	key := "db-schema"
	var with, without strings.Builder
	printItem(&with, &client.Item{ID: "x", Title: "Write the migration", PlanKey: &key})
	printItem(&without, &client.Item{ID: "y", Title: "Alone"})
	if !strings.Contains(with.String(), "plan key") || !strings.Contains(with.String(), key) {
		t.Errorf("items show of an imported item:\n%s", with.String())
	}
	if strings.Contains(without.String(), "plan key") {
		t.Errorf("items show of an item created alone names a plan key:\n%s", without.String())
	}
}
