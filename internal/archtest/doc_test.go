package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drawnArrows parses the "```imports" block of an architecture document:
// lines "a -> b, c", each an arrow a -> b and a -> c.
func drawnArrows(doc string) [][2]string {
	var out [][2]string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.TrimSpace(line) == "```imports":
			in = true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in:
			from, tos, ok := strings.Cut(line, "->")
			if !ok {
				continue
			}
			for _, to := range strings.Split(tos, ",") {
				if to = strings.TrimSpace(to); to != "" {
					out = append(out, [2]string{strings.TrimSpace(from), to})
				}
			}
		}
	}
	return out
}

// missingArrows returns the drawn arrows that are no direct import of g.
func missingArrows(g Graph, arrows [][2]string) []string {
	var out []string
	for _, a := range arrows {
		found := false
		for _, imp := range g[a[0]] {
			found = found || imp == a[1]
		}
		if !found {
			out = append(out, a[0]+" -> "+a[1])
		}
	}
	return out
}

// TestArchitectureDocArrowsExist: every arrow docs/architecture.md draws is
// an import of the code.
func TestArchitectureDocArrowsExist(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	arrows := drawnArrows(string(doc))
	if len(arrows) < 10 {
		t.Fatalf("found %d arrows in docs/architecture.md's imports block", len(arrows))
	}
	g, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missingArrows(g, arrows) {
		t.Errorf("docs/architecture.md draws %s, which the code does not import", m)
	}
}

func TestMissingArrows(t *testing.T) {
	t.Parallel()
	g := Graph{"lease": {"attention", "graph"}, "attention": {"db"}}
	arrows := drawnArrows("x\n```imports\nlease -> attention, graph\nattention -> graph\n```\nlease -> nothing\n")
	got := missingArrows(g, arrows)
	if len(got) != 1 || got[0] != "attention -> graph" {
		t.Fatalf("missing = %v, want [attention -> graph] (the arrow that does not exist)", got)
	}
}
