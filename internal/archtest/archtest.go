package archtest

import (
	"fmt"
	"sort"
	"strings"
)

// domain is every package that holds domain logic or its plumbing; none of
// them may depend on the HTTP layer or the wiring above it. telemetry is
// plumbing: db starts the spans of transactions through it.
var domain = []string{
	"graph", "lease", "attention", "auth", "session", "idempotency",
	"input", "page", "wgerr", "clock", "startstop", "telemetry/...", "db/...",
}

// Rules is THE list of forbidden imports. Patterns are import paths
// relative to the module; "x/..." is x and every package below it.
var Rules = []Rule{
	{
		From: domain, To: []string{"api", "web", "server", "cli", "cmd/..."}, Transitive: true,
		Why: "domain packages never depend on the HTTP layer or the wiring",
	},
	{
		From: []string{"graph"}, To: []string{"lease"}, Transitive: true,
		Why: "graph is below lease: leases end items, items know nothing of leases",
	},
	{
		From: []string{"attention"}, To: []string{"lease"}, Transitive: true,
		Why: "every fenced worker mutation, asking a person included, is a lease method that calls attention",
	},
	{
		From: []string{"api", "web"}, To: []string{"db/..."},
		Why: "handlers and pages speak domain types; storage belongs to the domain packages",
	},
	{
		From: []string{"fence", "wire"}, To: []string{"..."},
		Why: "fence is imported by other services (pgx and the standard library only) and wire by any client: neither depends on workgraph",
	},
}

// Rule forbids the packages matching From to import those matching To:
// directly, or through any chain of imports when Transitive.
type Rule struct {
	From, To   []string
	Transitive bool
	Why        string
}

// Graph is an import graph: each package (module-relative path) and the
// module packages it imports directly.
type Graph map[string][]string

// Violation is one forbidden import: the chain of imports from the
// importing package to the forbidden one, and the rule it breaks.
type Violation struct {
	Path []string
	Rule Rule
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s", strings.Join(v.Path, " -> "), v.Rule.Why)
}

// Check returns every violation of rules in g, sorted.
func Check(g Graph, rules []Rule) []Violation {
	var out []Violation
	pkgs := make([]string, 0, len(g))
	for p := range g {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, r := range rules {
		for _, from := range pkgs {
			if !matchAny(r.From, from) {
				continue
			}
			out = append(out, reach(g, r, from)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// reach walks the imports of from (all of them for a transitive rule, the
// direct ones otherwise) and reports each forbidden package it reaches
// once, with the shortest chain.
func reach(g Graph, r Rule, from string) []Violation {
	var out []Violation
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if matchAny(r.To, imp) {
				out = append(out, Violation{Path: chain(prev, imp), Rule: r})
			}
			if r.Transitive {
				queue = append(queue, imp)
			}
		}
	}
	return out
}

func chain(prev map[string]string, to string) []string {
	var path []string
	for p := to; p != ""; p = prev[p] {
		path = append([]string{p}, path...)
	}
	return path
}

func matchAny(patterns []string, pkg string) bool {
	for _, pat := range patterns {
		if match(pat, pkg) {
			return true
		}
	}
	return false
}

// match reports whether pkg is pat, or below it for a pattern "x/...";
// the pattern "..." matches every package of the module.
func match(pat, pkg string) bool {
	if pat == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pat
}
