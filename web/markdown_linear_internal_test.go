package web

import (
	"bytes"
	"html/template"
	"strings"
	"testing"

	"github.com/yuin/goldmark/parser"
)

// pathological are texts that made goldmark's parsers rescan the rest of
// a line or paragraph at every attempt that failed: work growing with the
// square of the text, about 0.8 s for a few thousand unclosed "[a](".
var pathological = map[string]func(n int) string{
	"UnclosedLinks":        func(n int) string { return strings.Repeat("[a](", n/4) },
	"UnclosedPointyLinks":  func(n int) string { return strings.Repeat("[a](<", n/5) },
	"UnclosedParenTitles":  func(n int) string { return strings.Repeat("[a](b (", n/7) },
	"UnclosedQuoteTitle":   func(n int) string { return "[a](b \"" + strings.Repeat("[a](b ", n/6) },
	"NestedBrackets":       func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("]", n/2) },
	"LinksInBrackets":      func(n int) string { return strings.Repeat("[", n/10) + strings.Repeat("[a](b)]", n/10) },
	"GrowingBacktickRuns":  func(n int) string { return backtickRuns(n) },
	"UnclosedBackticks":    func(n int) string { return strings.Repeat("`a", n/2) },
	"UnclosedDoubleTicks":  func(n int) string { return strings.Repeat("``a", n/3) },
	"EmphasisRuns":         func(n int) string { return strings.Repeat("*a", n/2) },
	"NestedEmphasis":       func(n int) string { return strings.Repeat("*", n/2) + "a" + strings.Repeat("*", n/2) },
	"MixedEmphasisLinks":   func(n int) string { return strings.Repeat("*[a](_", n/6) },
	"UnclosedImages":       func(n int) string { return strings.Repeat("![a](", n/5) },
	"UnclosedReferenceRun": func(n int) string { return strings.Repeat("[a][", n/4) },
	"WideTable":            wideTable,
	// With a reference defined, a label may be a shortcut or full
	// reference: goldmark walked the nodes after each '[' again.
	"ReferencedNestedBrackets": func(n int) string {
		return "[ref]: /r\n\n" + strings.Repeat("[", n/2) + strings.Repeat("]", n/2)
	},
	"ReferencedBracketGroups": func(n int) string {
		return "[ref]: /r\n\n" + strings.Repeat(strings.Repeat("[", 500)+strings.Repeat("]", 500), n/1000)
	},
	"FullReferencesInBrackets": func(n int) string {
		return "[ref]: /r\n\n" + strings.Repeat("[", n/5) + strings.Repeat("][x]", n/5)
	},
	"EscapedPipesInCode": func(n int) string { return "| a |\n|---|\n" + strings.Repeat("| `\\|` |\n", n/9) },
}

// wideTable is a header of n/14 columns over n/28 one-cell rows: GFM
// pads each row to the header's width, (n/14)·(n/28) cells.
func wideTable(n int) string {
	c := n / 14
	return "|" + strings.Repeat("a|", c) + "\n|" + strings.Repeat("-|", c) + "\n" + strings.Repeat("|a\n", c/2)
}

// backtickRuns is "`a“a```a…": runs of growing length, none closed.
func backtickRuns(n int) string {
	var b strings.Builder
	for k := 1; b.Len() < n; k++ {
		b.WriteString(strings.Repeat("`", k))
		b.WriteString("a")
	}
	return b.String()
}

// renderSteps renders src as renderMarkdown does and counts the bytes
// the link and code span scanners looked at (stepsKey).
func renderSteps(t testing.TB, src string) (template.HTML, int) {
	t.Helper()
	steps := 0
	pc := parser.NewContext()
	pc.Set(stepsKey, &steps)
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf, parser.WithContext(pc)); err != nil {
		t.Fatal(err)
	}
	return template.HTML(ugc.SanitizeBytes(buf.Bytes())), steps
}

// TestMarkdownLinear: the scanners' work on each pathological text of
// 50,000 characters is a bounded multiple of its length (goldmark's own
// parsers looked at about n²/8 bytes of the first: 300 million), and grows
// no faster than the text: four times the text, at most about four times
// the steps.
func TestMarkdownLinear(t *testing.T) {
	t.Parallel()
	const n = 50_000
	for name, gen := range pathological {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			small, big := gen(n/4), gen(n)
			_, s1 := renderSteps(t, small)
			_, s2 := renderSteps(t, big)
			// At most 40 steps a byte (the bound the copy of goldmark's
			// link parser this replaced was held to).
			if limit := 40 * len(big); s2 > limit {
				t.Errorf("%d bytes took %d scanner steps, want at most %d", len(big), s2, limit)
			}
			if s1 > 0 && s2 > 5*s1 && s2 > len(big) {
				t.Errorf("4× the text (%d → %d bytes) took %d× the steps (%d → %d): superlinear", len(small), len(big), s2/s1, s1, s2)
			}
		})
	}
}

// TestMarkdownLinearGuards: without linearLinks' guards, goldmark's
// link parser reads the square of the text of the pathological links
// (the step counter sees its work, so TestMarkdownLinear would fail).
func TestMarkdownLinearGuards(t *testing.T) {
	linkGuards = false
	defer func() { linkGuards = true }()
	for _, name := range []string{"UnclosedLinks", "UnclosedPointyLinks", "NestedBrackets", "LinksInBrackets", "ReferencedNestedBrackets", "FullReferencesInBrackets"} {
		src := pathological[name](8_000)
		if _, steps := renderSteps(t, src); steps <= 40*len(src) {
			t.Errorf("%s without guards: %d bytes took %d steps, want more than %d", name, len(src), steps, 40*len(src))
		}
	}
}

// TestMarkdownWideTable: a table whose header is far wider than its rows
// stays a paragraph, and writes about as many bytes as it reads (it was a
// million cells for 7 KB); tables written by hand, short rows included,
// are tables.
func TestMarkdownWideTable(t *testing.T) {
	t.Parallel()
	src := wideTable(14_000)
	if got := renderMarkdown(src); strings.Contains(string(got), "<td") || len(got) > 2*len(src) {
		t.Fatalf("a header of 1000 columns over 500 one-cell rows rendered as %d bytes (%d cells) from %d", len(got), strings.Count(string(got), "<td"), len(src))
	}
	for _, src := range []string{
		"| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n| 4 |\n",
		"|" + strings.Repeat(" x |", 40) + "\n|" + strings.Repeat("---|", 40) + "\n" + strings.Repeat("| 1 | 2 |\n", 20),
	} {
		if got := renderMarkdown(src); !strings.Contains(string(got), "<table>") {
			t.Errorf("renderMarkdown(%.60q…) = %.200q, want a table", src, got)
		}
	}
}

// TestMarkdownLinearRendersAsGoldmark: the unclosed link text of 50,000
// characters renders as its text, escaped, as goldmark rendered it; and
// links, titles, code spans and autolinks people write render as before.
func TestMarkdownLinearRendersAsGoldmark(t *testing.T) {
	t.Parallel()
	got, _ := renderSteps(t, strings.Repeat("[a](", 12_500))
	if want := template.HTML("<p>" + strings.Repeat("[a](", 12_500) + "</p>\n"); got != want {
		t.Fatalf("unclosed links rendered as %.200q…, want their text", got)
	}
	for src, want := range map[string]string{
		"[a](http://x.example/p)":                `href="http://x.example/p" rel="nofollow noopener" target="_blank">a</a>`,
		`[a](http://x.example/p "the title")`:    `title="the title"`,
		`[a](http://x.example/p (paren title))`:  `title="paren title"`,
		"[a](<http://x.example/p q>)":            `href="http://x.example/p%20q"`,
		"[a](http://x.example/(1)(2))":           `href="http://x.example/(1)(2)"`,
		"[[a](http://x.example/in)](http://out)": `>a</a>](http://out)`,
		"[ref]\n\n[ref]: http://x.example/r":     `href="http://x.example/r"`,
		"`a` and ``b ` c`` and ```d":             "<code>a</code> and <code>b ` c</code> and ```d",
		"see www.example.com now":                `href="http://www.example.com"`,
		"[www.example.com](http://x.example/w)":  `target="_blank">www.example.com</a></p>`,
		"| a | b |\n|---|---|\n| `x\\|y` | 2 |":  "<code>x|y</code>",
		"~~gone~~ and **bold** and *em*":         "<del>gone</del>",
		`[a](http://x.example/p "unclosed`:       `</a> &#34;unclosed`,
		`[a](http://x.example/p (un(closed)`:     "(un(closed)",
	} {
		if got, _ := renderSteps(t, src); !strings.Contains(string(got), want) {
			t.Errorf("renderMarkdown(%q) = %q, want it to contain %q", src, got, want)
		}
	}
}

// BenchmarkRenderMarkdownPathological renders each pathological text of
// 50,000 characters.
func BenchmarkRenderMarkdownPathological(b *testing.B) {
	for name, gen := range pathological {
		src := gen(50_000)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				renderMarkdown(src)
			}
		})
	}
}
