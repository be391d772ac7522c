package web

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestRenderGraphSVG(t *testing.T) {
	t.Parallel()
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	nodes := []graphNode{
		{ID: a, Title: `<script>alert("x")</script> \N & more`, State: "done", Href: "/p/x/items/" + a.String()},
		{ID: b, Title: "Second item with a rather long title that needs wrapping onto lines", State: "ready", Critical: true, Focus: true},
		{ID: c, Title: "Parent", State: "blocked"},
	}
	edges := []graphEdge{{From: a, To: b, Critical: true}, {From: b, To: c, Child: true}}
	svg, _, err := renderGraphSVG(context.Background(), nodes, edges, false)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(svg), "&#45;", "-")
	t.Run("OK", func(t *testing.T) {
		if !strings.HasPrefix(s, "<svg") {
			t.Fatalf("not an inline svg: %.80q", s)
		}
		for _, id := range []uuid.UUID{a, b, c} {
			if !strings.Contains(s, `id="n-`+id.String()+`"`) {
				t.Errorf("node %s missing", id)
			}
		}
		if !strings.Contains(s, "/p/x/items/"+a.String()) {
			t.Error("node link missing")
		}
		if !strings.Contains(s, "critical") {
			t.Error("critical path not marked")
		}
	})
	t.Run("Escaped", func(t *testing.T) {
		if strings.Contains(s, "<script") {
			t.Fatalf("raw <script> in svg:\n%s", s)
		}
		if !strings.Contains(s, "&lt;script&gt;") {
			t.Fatalf("escaped title missing:\n%s", s)
		}
		if !strings.Contains(s, `\N`) {
			t.Errorf("backslash sequence was interpreted instead of shown")
		}
		if strings.Contains(s, "<!--") {
			t.Error("comments left in inline svg")
		}
	})
}

func TestWrap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want []string
	}{
		{"short", []string{"short"}},
		{"one two three four", []string{"one two", "three four"}},
		{"one two three four five six", []string{"one two", "three fou…"}},
		{"abcdefghijklmnop", []string{"abcdefghij", "klmnop"}},
		{"", []string{""}},
	}
	for _, c := range cases {
		got := wrap(c.in, 10, 2)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
