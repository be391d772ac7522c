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
