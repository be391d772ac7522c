package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/input"
)

// A plan file (YAML, or JSON when its name ends in .json) lists items with local keys:
//
//	items:
//	  - key: schema
//	    title: Write the migration
//	    body: |
//	      markdown
//	    priority: 5
//	    labels: [db]
//	    requires: [go, db-migrations]
//	    touches: ["db:schema", "repo:db/migrations/**"]
//	    on_expiry: reconcile   # an expired lease waits for a person's decision
//	  - key: api
//	    title: Add the endpoint
//	    depends_on: [schema]
//	    children:
//	      - key: api-tests
//	        title: Tests for the endpoint
//
// A top-level list (without "items:") is accepted too. Keys are unique in
// the whole plan; depends_on names keys of the plan (or ids of existing
// items). Everything is checked here, with the line of each fault, before
// anything is sent.

// planNode is one item of a parsed plan, with where it was written.
type planNode struct {
	Key, Title, Body string
	Priority         *int
	Labels           []string
	Requires         []string
	Touches          []string
	DependsOn        []string
	OnExpiry         string
	Children         []*planNode
	Parent           *planNode

	Line      int   // line of the item
	DepLines  []int // line of each DependsOn entry
	titleLine int
}

// plan is a parsed, validated plan.
type plan struct {
	File  string
	Roots []*planNode
	All   []*planNode // every item, parents before children, in file order
	ByKey map[string]*planNode
	// tooLarge: the plan has more items than one import takes (reported
	// once; the rest is not read).
	tooLarge bool
	// Prefixes are the depends_on entries that are no key of the plan but
	// the start of an id (as tables show ids): the importer looks them up
	// (resolvePlanPrefixes) before the plan is sent.
	Prefixes []planRef
}

// planRef is one depends_on entry: Node.DependsOn[Index], at
// Node.DepLines[Index].
type planRef struct {
	Node  *planNode
	Index int
}

// planOptions adjust parsing: flat plans (decompose children) have no
// children of their own.
type planOptions struct {
	flat bool
	// json: the file is JSON, whose values have types: a field that wants
	// text takes a string, priority a number, a list field an array
	// (YAML reads 5 as text where a title is wanted, and one word as a
	// list of one).
	json bool
}

// planError is one fault of a plan file at a line.
type planError struct {
	Line int
	Msg  string
}

// planErrors are all faults found in a plan file, in line order.
type planErrors struct {
	File string
	List []planError
}

// maxPlanErrors bounds how many faults are reported at once.
const maxPlanErrors = 20

func (e *planErrors) Error() string {
	var b strings.Builder
	n := len(e.List)
	fmt.Fprintf(&b, "%s: %d problem", e.File, n)
	if n != 1 {
		b.WriteString("s")
	}
	b.WriteString(", nothing was sent:")
	for i, pe := range e.List {
		if i == maxPlanErrors {
			fmt.Fprintf(&b, "\n  ... and %d more", n-maxPlanErrors)
			break
		}
		if pe.Line > 0 {
			fmt.Fprintf(&b, "\n  %s:%d: %s", e.File, pe.Line, pe.Msg)
		} else {
			fmt.Fprintf(&b, "\n  %s: %s", e.File, pe.Msg)
		}
	}
	return b.String()
}

func (e *planErrors) add(line int, format string, args ...any) {
	e.List = append(e.List, planError{Line: line, Msg: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parsePlan parses and validates a plan file. Its error is a *planErrors
// naming every fault with its line.
func parsePlan(file string, data []byte, opt planOptions) (*plan, error) {
	p, err := parsePlanFile(file, data, opt)
	var errs *planErrors
	if errors.As(err, &errs) && markdownName(file) {
		// A plan written as a Markdown list fails as YAML in ways that do
		// not say what is wrong ("did not find expected '-' indicator").
		errs.List = append([]planError{{Msg: "a plan is YAML or JSON, not Markdown: a list of items, each with key and title (see `workgraph import --help`)"}}, errs.List...)
	}
	return p, err
}

// markdownName reports whether a file's name says it is Markdown.
func markdownName(file string) bool {
	ext := strings.ToLower(filepath.Ext(file))
	return ext == ".md" || ext == ".markdown"
}

func parsePlanFile(file string, data []byte, opt planOptions) (*plan, error) {
	errs := &planErrors{File: file}
	data = planText(data)
	if strings.HasSuffix(strings.ToLower(file), ".json") {
		// JSON is YAML too, but YAML accepts what JSON refuses (a trailing
		// comma, comments, unquoted strings): a .json file must be JSON.
		if err := checkJSON(data); err != nil {
			errs.List = append(errs.List, *err)
			return nil, errs
		}
		opt.json = true
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			if tab := tabLine(data, line); tab > 0 {
				errs.add(tab, "syntax: a tab in the indentation (YAML indents with spaces)")
			} else {
				errs.add(line, "syntax: %s", m[2])
			}
		} else {
			errs.add(0, "syntax: %s", strings.TrimPrefix(msg, "yaml: "))
		}
		return nil, errs
	}
	p := &plan{File: file, ByKey: map[string]*planNode{}}
	if len(doc.Content) == 0 {
		errs.add(0, "the file is empty: want a list of items")
		return nil, errs
	}
	root := doc.Content[0]
	list := root
	if root.Kind == yaml.MappingNode {
		list = nil
		fields := map[string]int{}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], yamlTarget(root.Content[i+1])
			if duplicateField(k, fields, errs) {
				continue
			}
			switch {
			case k.Value == "items" || (opt.flat && k.Value == "children"):
				if list != nil {
					errs.add(k.Line, "a second list of items: put all items in one list")
					continue
				}
				list = v
			default:
				errs.add(k.Line, "unknown top-level field %q (want \"items\")", k.Value)
			}
		}
		if list == nil {
			errs.add(root.Line, "no \"items\" list")
			return nil, errs
		}
	}
	if list.Kind != yaml.SequenceNode {
		errs.add(list.Line, "want a list of items, found %s", kindName(list))
		return nil, errs
	}
	p.Roots = p.parseItems(list, nil, opt, errs)
	if len(p.All) == 0 && len(errs.List) == 0 {
		errs.add(list.Line, "the plan has no items")
	}
	p.checkReferences(opt, errs)
	if len(errs.List) == 0 {
		p.checkCycles(errs)
	}
	if len(errs.List) > 0 {
		sort.SliceStable(errs.List, func(i, j int) bool { return errs.List[i].Line < errs.List[j].Line })
		return nil, errs
	}
	return p, nil
}

// planText returns a plan file's text as UTF-8 without a byte order mark:
// editors on Windows save UTF-8 with a BOM, and UTF-16 with one, which the
// YAML parser reads but a JSON parser refuses at its first byte. A JSON
// plan and a YAML plan saved by the same editor read alike.
func planText(data []byte) []byte {
	var order binary.ByteOrder
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		order = binary.LittleEndian
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		order = binary.BigEndian
	default:
		return data
	}
	units := make([]uint16, 0, len(data)/2)
	for i := 2; i+1 < len(data); i += 2 {
		units = append(units, order.Uint16(data[i:]))
	}
	return []byte(string(utf16.Decode(units)))
}

// checkJSON reports the first JSON syntax error of data with its line and
// column.
func checkJSON(data []byte) *planError {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &planError{Msg: "JSON: " + err.Error()}
	}
	line, col := 1, 1
	for _, c := range data[:min(int(se.Offset), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	// Offset is just past the offending byte.
	if col > 1 {
		col--
	}
	return &planError{Line: line, Msg: fmt.Sprintf("column %d: JSON syntax: %s", col, se.Error())}
}

// tabLine finds the line, from the one the YAML parser names, whose
// indentation holds a tab: the parser reports a tab at the start of a line
// on the line before it. 0 when there is none near.
func tabLine(data []byte, reported int) int {
	lines := strings.Split(string(data), "\n")
	for l := max(reported, 1); l <= len(lines) && l <= reported+1; l++ {
		indent := lines[l-1][:len(lines[l-1])-len(strings.TrimLeft(lines[l-1], " \t"))]
		if strings.Contains(indent, "\t") {
			return l
		}
	}
	return 0
}

var itemFields = "key, title, body, priority, labels, requires, touches, depends_on, on_expiry, children"

func (p *plan) parseItems(seq *yaml.Node, parent *planNode, opt planOptions, errs *planErrors) []*planNode {
	var out []*planNode
	for _, n := range seq.Content {
		if len(p.All) >= graph.MaxPlanItems {
			// An alias counts each time it is used: a few lines of anchors
			// could otherwise stand for billions of items.
			if !p.tooLarge {
				errs.add(0, "more than %d items (the most one import takes; an alias counts each time it is used)", graph.MaxPlanItems)
				p.tooLarge = true
			}
			return out
		}
		n = yamlTarget(n)
		if n.Kind != yaml.MappingNode {
			errs.add(n.Line, "an item must be a mapping with key and title, found %s", kindName(n))
			continue
		}
		it := &planNode{Line: n.Line, Parent: parent}
		var keyLine int
		var children *yaml.Node
		fields := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], yamlTarget(n.Content[i+1])
			if duplicateField(k, fields, errs) {
				continue
			}
			if opt.json {
				if msg := jsonTypeFault(k.Value, v); msg != "" {
					errs.add(v.Line, "%s", msg)
					continue
				}
			}
			switch k.Value {
			case "key":
				if s, ok := scalar(v, errs, "key"); ok {
					it.Key, keyLine = strings.TrimSpace(s), v.Line
				}
			case "title":
				if s, ok := scalar(v, errs, "title"); ok {
					it.Title, it.titleLine = s, v.Line
				}
			case "body":
				if s, ok := scalar(v, errs, "body"); ok {
					it.Body = s
					if err := input.Prose("body", s); err != nil {
						errs.add(v.Line, "%v", err)
					}
				}
			case "priority":
				if s, ok := scalar(v, errs, "priority"); ok && v.Tag != "!!null" {
					pr, err := strconv.ParseInt(s, 10, 32)
					if errors.Is(err, strconv.ErrRange) {
						errs.add(v.Line, "priority %s: out of range, want an integer from %d to %d", s, math.MinInt32, math.MaxInt32)
					} else if err != nil {
						errs.add(v.Line, "priority %q: want an integer", s)
					} else {
						x := int(pr)
						it.Priority = &x
					}
				}
			case "labels":
				for _, l := range stringList(v, errs, "labels") {
					if strings.TrimSpace(l.Value) == "" {
						errs.add(l.Line, "empty label")
						continue
					}
					it.Labels = append(it.Labels, l.Value)
				}
			case "requires", "touches":
				for _, l := range stringList(v, errs, k.Value) {
					if strings.TrimSpace(l.Value) == "" {
						errs.add(l.Line, "empty %s entry", k.Value)
						continue
					}
					if k.Value == "requires" {
						it.Requires = append(it.Requires, l.Value)
					} else {
						it.Touches = append(it.Touches, l.Value)
					}
				}
			case "depends_on", "depends_on_keys":
				for _, d := range stringList(v, errs, k.Value) {
					it.DependsOn = append(it.DependsOn, strings.TrimSpace(d.Value))
					it.DepLines = append(it.DepLines, d.Line)
				}
			case "on_expiry":
				s, ok := scalar(v, errs, "on_expiry")
				switch {
				case !ok, v.Tag == "!!null":
				case opt.flat:
					errs.add(k.Line, "on_expiry cannot be set here (set it on the item afterwards: workgraph items edit ID --on-expiry %s)", s)
				case s != graph.OnExpiryRetry && s != graph.OnExpiryReconcile:
					errs.add(v.Line, "on_expiry %q: want %s or %s (leave it out for the project's default)", s, graph.OnExpiryRetry, graph.OnExpiryReconcile)
				default:
					it.OnExpiry = s
				}
			case "children":
				if opt.flat {
					errs.add(k.Line, "children cannot be nested here")
					continue
				}
				if v.Kind != yaml.SequenceNode {
					errs.add(v.Line, "children: want a list of items, found %s", kindName(v))
					continue
				}
				children = v
			case "<<":
				errs.add(k.Line, "a merge key (<<) cannot be used in a plan: write the fields, or give each an alias (labels: *common)")
			default:
				errs.add(k.Line, "unknown field %q (known: %s)", k.Value, itemFields)
			}
		}
		switch {
		case it.Key == "":
			errs.add(n.Line, "item has no key (every item needs a key unique in the plan: dependencies name it, and a re-import leaves the item of that key alone instead of adding another)")
		case utf8.RuneCountInString(it.Key) > 200:
			errs.add(keyLine, "key is longer than 200 characters")
		default:
			if err := input.Line("key", it.Key); err != nil {
				errs.add(keyLine, "%v", err)
			} else if first, dup := p.ByKey[it.Key]; dup {
				errs.add(keyLine, "duplicate key %q (first defined at line %d)", it.Key, first.Line)
			} else {
				p.ByKey[it.Key] = it
			}
		}
		switch n := utf8.RuneCountInString(strings.TrimSpace(it.Title)); {
		case n == 0:
			errs.add(it.Line, "item %q has no title", it.Key)
		case n > 500:
			errs.add(it.titleLine, "title of %q is longer than 500 characters", it.Key)
		default:
			if err := input.Line("title", strings.TrimSpace(it.Title)); err != nil {
				errs.add(it.titleLine, "%v", err)
			}
		}
		p.All = append(p.All, it)
		out = append(out, it)
		if children != nil {
			it.Children = p.parseItems(children, it, opt, errs)
		}
	}
	return out
}

// checkReferences: every depends_on names a key of the plan, not itself,
// not twice; or an existing item, by its id or (not in a flat plan) the
// start of it, which is kept in p.Prefixes.
func (p *plan) checkReferences(opt planOptions, errs *planErrors) {
	for _, it := range p.All {
		seen := map[string]bool{}
		for i, d := range it.DependsOn {
			line := it.DepLines[i]
			switch {
			case d == it.Key:
				errs.add(line, "item %q depends on itself", it.Key)
			case p.ByKey[d] == nil && isUUID(d):
				// An existing item of the project: the server checks it.
			case p.ByKey[d] == nil && !opt.flat && isIDPrefix(d):
				p.Prefixes = append(p.Prefixes, planRef{Node: it, Index: i})
			case p.ByKey[d] == nil:
				hint := suggestKey(d, p.ByKey)
				if hint == "" && !opt.flat {
					// Keys are looked up in this file only: an item of an
					// earlier import (of another file) is named by its id.
					hint = " (depends_on names keys of this file; an item imported from another file is named by its id or its first characters, as `workgraph items ls` shows them)"
				}
				errs.add(line, "item %q depends on unknown key %q%s", it.Key, d, hint)
			case seen[d]:
				errs.add(line, "item %q lists %q twice in depends_on", it.Key, d)
			}
			seen[d] = true
		}
	}
}

// suggestKey names a known key that differs from k only in case or
// surrounding punctuation, if any.
func suggestKey(k string, keys map[string]*planNode) string {
	norm := func(s string) string { return strings.ToLower(strings.Trim(s, " -_.")) }
	for other := range keys {
		if norm(other) == norm(k) {
			return fmt.Sprintf(" (did you mean %q?)", other)
		}
	}
	return ""
}

// checkCycles finds the cycles of the waits-for graph: an item waits for
// its dependencies and a parent waits for its children. It reports each
// cycle that shares no item with one reported before (at most
// maxPlanErrors), listing its keys and lines.
func (p *plan) checkCycles(errs *planErrors) {
	reported := map[*planNode]bool{}
	for found := 0; found < maxPlanErrors; found++ {
		cycle := p.findCycle(reported)
		if cycle == nil {
			return
		}
		for _, n := range cycle {
			reported[n] = true
		}
		var b strings.Builder
		for i, n := range cycle {
			if i > 0 {
				if n.Parent == cycle[i-1] && !contains(cycle[i-1].DependsOn, n.Key) {
					b.WriteString(" -> (child) ")
				} else {
					b.WriteString(" -> ")
				}
			}
			fmt.Fprintf(&b, "%s (line %d)", n.Key, n.Line)
		}
		errs.add(cycle[0].Line, "dependency cycle: %s; an item waits for its depends_on and a parent for its children, so remove one of these edges", b.String())
	}
}

// findCycle returns a cycle of the waits-for graph (its first item again
// at its end) among the items not in skip, or nil. Skipping the items of
// each cycle found lets checkCycles report every cycle that shares no item
// with an earlier one, each once.
func (p *plan) findCycle(skip map[*planNode]bool) []*planNode {
	const (
		white = iota
		grey
		black
	)
	color := map[*planNode]int{}
	var stack, cycle []*planNode
	waitsFor := func(n *planNode) []*planNode {
		out := make([]*planNode, 0, len(n.DependsOn)+len(n.Children))
		for _, d := range n.DependsOn {
			if m := p.ByKey[d]; m != nil && !skip[m] {
				out = append(out, m)
			}
		}
		for _, c := range n.Children {
			if !skip[c] {
				out = append(out, c)
			}
		}
		return out
	}
	var visit func(n *planNode) bool
	visit = func(n *planNode) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range waitsFor(n) {
			switch color[m] {
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == m {
						cycle = append(append([]*planNode{}, stack[i:]...), m)
						return true
					}
				}
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, n := range p.All {
		if !skip[n] && color[n] == white && visit(n) {
			return cycle
		}
	}
	return nil
}

// duplicateField reports a field written twice in one mapping (YAML
// parsers keep one of the two silently, so half of what was written would
// be lost) and says whether k is such a repeat; fields maps the names seen
// so far to their lines.
func duplicateField(k *yaml.Node, fields map[string]int, errs *planErrors) bool {
	if first, dup := fields[k.Value]; dup {
		errs.add(k.Line, "field %q written twice (first at line %d)", k.Value, first)
		return true
	}
	fields[k.Value] = k.Line
	return false
}

// jsonTypeFault says what is wrong with the type of a JSON plan item's
// field value v, "" when nothing is (or the field is unknown: reported
// later). null stands for a field left out.
func jsonTypeFault(field string, v *yaml.Node) string {
	if v.Tag == "!!null" {
		return ""
	}
	switch field {
	case "key", "title", "body", "on_expiry":
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			return fmt.Sprintf("%s: want a string, found %s", field, jsonKindName(v))
		}
	case "priority":
		if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
			return fmt.Sprintf("priority: want a whole number, found %s", jsonKindName(v))
		}
	case "labels", "requires", "touches", "depends_on", "depends_on_keys":
		if v.Kind != yaml.SequenceNode {
			return fmt.Sprintf("%s: want an array of strings, found %s", field, jsonKindName(v))
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
				return fmt.Sprintf("%s: want an array of strings, found %s in it", field, jsonKindName(e))
			}
		}
	}
	return ""
}

// jsonKindName names a JSON value's type, with the value when it is short:
// the number 5, the string "5", true, an array, an object.
func jsonKindName(v *yaml.Node) string {
	switch {
	case v.Kind == yaml.SequenceNode:
		return "an array"
	case v.Kind == yaml.MappingNode:
		return "an object"
	case v.Tag == "!!str":
		return fmt.Sprintf("the string %q", v.Value)
	case v.Tag == "!!int", v.Tag == "!!float":
		return "the number " + v.Value
	case v.Tag == "!!bool":
		return v.Value
	}
	return kindName(v)
}

// yamlTarget returns the node an alias (*name) stands for, else n: a plan may
// share a value through an anchor (touches: &web [...], then touches: *web).
func yamlTarget(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// scalar returns the text of a single value; a null (`~`, `null`, or
// nothing after the colon) is the empty text, not the word "null".
func scalar(v *yaml.Node, errs *planErrors, field string) (string, bool) {
	if v.Kind != yaml.ScalarNode {
		errs.add(v.Line, "%s: want a single value, found %s", field, kindName(v))
		return "", false
	}
	if v.Tag == "!!null" {
		return "", true
	}
	return v.Value, true
}

// stringList accepts a list of scalars, or a single scalar.
func stringList(v *yaml.Node, errs *planErrors, field string) []*yaml.Node {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil
		}
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, e := range v.Content {
			e = yamlTarget(e)
			if e.Kind != yaml.ScalarNode {
				errs.add(e.Line, "%s: want a list of strings, found %s in it", field, kindName(e))
				continue
			}
			out = append(out, e)
		}
		return out
	}
	errs.add(v.Line, "%s: want a list of strings, found %s", field, kindName(v))
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

// request converts the plan into the API's plan request.
func (p *plan) request(dryRun bool) client.PlanRequest {
	var conv func([]*planNode) []client.PlanItem
	conv = func(ns []*planNode) []client.PlanItem {
		out := make([]client.PlanItem, 0, len(ns))
		for _, n := range ns {
			out = append(out, client.PlanItem{
				Key: n.Key, Title: n.Title, Body: n.Body, Priority: n.Priority,
				Labels: n.Labels, Requires: n.Requires, Touches: n.Touches, DependsOn: n.DependsOn,
				Children: conv(n.Children), Line: n.Line, OnExpiry: n.OnExpiry,
			})
		}
		return out
	}
	return client.PlanRequest{Items: conv(p.Roots), DryRun: dryRun}
}

// children converts a flat plan into decomposition children.
func (p *plan) children() []client.Child {
	out := make([]client.Child, 0, len(p.Roots))
	for _, n := range p.Roots {
		out = append(out, client.Child{
			Key: n.Key, Title: n.Title, Body: n.Body, Priority: n.Priority,
			Labels: n.Labels, Requires: n.Requires, Touches: n.Touches, DependsOnKeys: n.DependsOn,
		})
	}
	return out
}

// dependencyCount is the number of depends_on edges in the plan.
func (p *plan) dependencyCount() int {
	n := 0
	for _, it := range p.All {
		n += len(it.DependsOn)
	}
	return n
}

// lineOf returns the line of the item with key k (0 when unknown).
func (p *plan) lineOf(k string) int {
	if n := p.ByKey[k]; n != nil {
		return n.Line
	}
	return 0
}

// isUUID reports whether s is an item id rather than a plan key.
func isUUID(s string) bool { return uuidRE.MatchString(s) }

// isIDPrefix reports whether s may be the start of an id: at least
// graph.MinIDPrefix hex digits, with or without the dashes of the printed
// form (the server's lookup decides).
func isIDPrefix(s string) bool {
	if _, _, err := graph.IDPrefixRange(s); err != nil {
		return false
	}
	return strings.TrimLeft(s, "0123456789abcdefABCDEF-") == ""
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
