package web

import (
	"strings"
	"testing"
)

// TestRenderMarkdownImages: no image, however written, makes the browser
// fetch from another host; the alt text and the address stay readable.
func TestRenderMarkdownImages(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src  string
		want []string // substrings of the output
	}{
		"Inline":       {"see ![the chart](http://other-host/x.png?u=1)", []string{"the chart", `href="http://other-host/x.png?u=1"`}},
		"Reference":    {"![chart][c]\n\n[c]: https://other-host/c.png", []string{"chart", `href="https://other-host/c.png"`}},
		"NoAlt":        {"![](https://other-host/y.png)", []string{`href="https://other-host/y.png"`}},
		"InLink":       {"[![badge](https://other-host/b.svg)](https://example.org/)", []string{"badge", `href="https://example.org/"`}},
		"RawHTML":      {`<img src="http://other-host/z.png">`, nil},
		"Relative":     {"![local](/static/x.png)", []string{"local"}},
		"DataURL":      {"![dot](data:image/png;base64,iVBORw0KGgo=)", []string{"dot"}},
		"Javascript":   {"![x](javascript:alert(1))", []string{"x"}},
		"ProtocolLess": {"![p](//other-host/p.png)", []string{"p"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := string(renderMarkdown(tc.src))
			if strings.Contains(strings.ToLower(got), "<img") {
				t.Errorf("renderMarkdown(%q) = %q: emits an image", tc.src, got)
			}
			if strings.Contains(strings.ToLower(got), "javascript:") {
				t.Errorf("renderMarkdown(%q) = %q: keeps a javascript: address", tc.src, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("renderMarkdown(%q) = %q, want it to contain %q", tc.src, got, w)
				}
			}
		})
	}
}

// TestMarkdownTaskList: GFM task lists render as disabled checkboxes (the
// sanitiser keeps goldmark's task-list inputs, and only those attributes).
func TestMarkdownTaskList(t *testing.T) {
	t.Parallel()
	got := string(renderMarkdown("- [x] write the migration\n- [ ] add the endpoint\n"))
	for _, want := range []string{`<input checked="" disabled="" type="checkbox">`, `<input disabled="" type="checkbox">`} {
		if !strings.Contains(got, want) {
			t.Fatalf("task list rendered as %q, want %q in it", got, want)
		}
	}
	if got := string(renderMarkdown(`<input type="text" name="x" onclick="alert(1)">`)); strings.Contains(got, "<input") {
		t.Fatalf("raw HTML input survived: %q", got)
	}
}

// TestRenderMarkdownDeepNesting: markdown nested deeper than
// markdownMaxDepth (a line of 30,000 '>' is 30,000 blockquotes) is shown as
// its text, escaped, instead of being parsed: goldmark's parse grows with
// the square of the depth, so one 30 KB description took 1.5 s of CPU on
// every view of its item page and of each inbox request that shows it
// (and wrote 800 KB of nested blockquotes). Nesting people write still
// renders.
func TestRenderMarkdownDeepNesting(t *testing.T) {
	t.Parallel()
	deep := map[string]string{
		"Blockquotes": strings.Repeat(">", 30000) + " x",
		"Lists":       strings.Repeat("- ", 10000) + "x",
		"Ordered":     strings.Repeat("1. ", 5000) + "x",
		"Mixed":       "intro\n\n" + strings.Repeat("> - ", 5000) + "<script>x</script>",
	}
	for name, src := range deep {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := string(renderMarkdown(src))
			for _, tag := range []string{"<blockquote", "<ul", "<ol", "<li", "<script"} {
				if n := strings.Count(got, tag); n > 0 {
					t.Fatalf("renderMarkdown of %d bytes nested %s writes %d %s elements, want its text", len(src), name, n, tag)
				}
			}
			if !strings.HasPrefix(got, `<pre class="md-source">`) {
				t.Errorf("renderMarkdown = %.80q…, want the source in a <pre>", got)
			}
		})
	}
	t.Run("ShallowRenders", func(t *testing.T) {
		t.Parallel()
		src := strings.Repeat("> ", markdownMaxDepth) + "quoted\n\n" + strings.Repeat("  ", 0) + "- a\n  - b\n    - c\n"
		got := string(renderMarkdown(src))
		if n := strings.Count(got, "<blockquote>"); n != markdownMaxDepth {
			t.Errorf("%d nested quotes render as %d blockquotes, want %d", markdownMaxDepth, n, markdownMaxDepth)
		}
		if n := strings.Count(got, "<ul>"); n != 3 {
			t.Errorf("a list nested 3 deep renders %d lists, want 3", n)
		}
	})
}
