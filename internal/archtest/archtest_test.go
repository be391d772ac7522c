package archtest

import (
	"strings"
	"testing"
)

// TestImportRules checks the module's real import graph against Rules.
func TestImportRules(t *testing.T) {
	t.Parallel()
	g, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"api", "web", "graph", "lease", "db/dbq"} {
		if _, ok := g[must]; !ok {
			t.Fatalf("the graph has no package %s: %v", must, g)
		}
	}
	for _, v := range Check(g, Rules) {
		t.Errorf("forbidden import: %s", v)
	}
}

// TestCheckFindsPlantedImports: the checker on a fake graph, one planted
// import per rule (direct and through a chain), and the allowed arrows.
func TestCheckFindsPlantedImports(t *testing.T) {
	t.Parallel()
	clean := Graph{
		"server":    {"api", "web", "lease", "db"},
		"api":       {"lease", "graph", "idempotency", "wgerr"},
		"web":       {"session", "graph"},
		"lease":     {"attention", "graph", "db", "db/dbq"},
		"attention": {"db/dbq"},
		"graph":     {"db", "db/dbq"},
		"session":   {"auth", "db/dbq"},
		"db":        {"wgerr"},
		"db/dbq":    nil,
	}
	if v := Check(clean, Rules); len(v) != 0 {
		t.Fatalf("violations in a clean graph: %v", v)
	}
	tests := map[string]struct {
		from, to string
		want     string // a chain reported
	}{
		"DomainImportsAPI":        {"graph", "api", "graph -> api"},
		"DomainImportsWebDeep":    {"db/dbq", "web", "db/dbq -> web"},
		"DomainReachesAPI":        {"db", "server", "db -> server"},
		"GraphImportsLease":       {"graph", "lease", "graph -> lease"},
		"GraphReachesLease":       {"db/dbq", "lease", "graph -> db/dbq -> lease"},
		"AttentionImportsLease":   {"attention", "lease", "attention -> lease"},
		"APIImportsDB":            {"api", "db", "api -> db"},
		"WebImportsDBQ":           {"web", "db/dbq", "web -> db/dbq"},
		"WebImportsDBSubpackage":  {"web", "db/embedpg", "web -> db/embedpg"},
		"DomainReachesServerDeep": {"session", "cli", "session -> cli"},
		"TelemetryImportsServer":  {"telemetry", "server", "telemetry -> server"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := Graph{}
			for k, v := range clean {
				g[k] = append([]string(nil), v...)
			}
			g[tt.from] = append(g[tt.from], tt.to)
			if _, ok := g[tt.to]; !ok {
				g[tt.to] = nil
			}
			v := Check(g, Rules)
			if len(v) == 0 {
				t.Fatalf("planted import %s -> %s not reported", tt.from, tt.to)
			}
			found := false
			for _, x := range v {
				if strings.Join(x.Path, " -> ") == tt.want {
					found = true
				}
			}
			if !found {
				t.Fatalf("planted import %s -> %s: reported %v, want the chain %q", tt.from, tt.to, v, tt.want)
			}
		})
	}
	t.Run("APIReachesDBThroughDomainIsAllowed", func(t *testing.T) {
		t.Parallel()
		// api -> lease -> db is how storage is meant to be reached.
		if v := Check(clean, Rules[3:4]); len(v) != 0 {
			t.Fatalf("a direct-only rule reported a transitive import: %v", v)
		}
	})
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pat, pkg string
		want     bool
	}{
		{"db/...", "db", true},
		{"db/...", "db/dbq", true},
		{"db/...", "dbx", false},
		{"api", "api", true},
		{"api", "api/x", false},
		{"...", "graph", true},
		{"...", "db/dbq", true},
	} {
		if got := match(tt.pat, tt.pkg); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pat, tt.pkg, got, tt.want)
		}
	}
}
