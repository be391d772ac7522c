package web

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Markdown written by agents and people (item bodies, questions, answers) is
// rendered in two safe steps: goldmark without its "unsafe" option drops raw
// HTML and dangerous link schemes, and bluemonday's UGC policy sanitises the
// result again, so a bug in either alone cannot inject markup.
//
// Images are never rendered: an image makes every reader's browser fetch
// from wherever the author chose (a tracking pixel, a probe of the reader's
// network), so each becomes a link to its address with its alt text (see
// imagesAsLinks).
var (
	markdown = markdownLinear(parser.WithASTTransformers(util.Prioritized(imagesAsLinks{}, 100)))
	ugc      = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.RequireNoFollowOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(true)
		// GFM task lists: goldmark writes each box as a disabled checkbox.
		// Raw HTML never reaches the sanitiser (goldmark drops it), and only
		// a checkbox's type and state are kept.
		p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
		p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^$`)).OnElements("input")
		return p
	}()
)

// renderMarkdown returns src as sanitised HTML.
func renderMarkdown(src string) template.HTML {
	if src == "" {
		return ""
	}
	if nestedTooDeep(src) {
		// Parsing it would cost the square of its depth: its text instead.
		return template.HTML(`<pre class="md-source">` + template.HTMLEscapeString(src) + `</pre>`)
	}
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		// goldmark only fails on writer errors; show the source as text.
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(ugc.SanitizeBytes(buf.Bytes()))
}

// imagesAsLinks replaces every image of the document with a link to its
// address whose text is the image's alt text ("image" when it has none).
// An image inside a link becomes its alt text only: links do not nest.
type imagesAsLinks struct{}

func (imagesAsLinks) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	var images []*ast.Image
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if img, ok := n.(*ast.Image); ok && entering {
			images = append(images, img)
		}
		return ast.WalkContinue, nil
	})
	for _, img := range images {
		parent := img.Parent()
		if parent == nil {
			continue
		}
		if !img.HasChildren() {
			img.AppendChild(img, ast.NewString([]byte("image")))
		}
		if insideLink(img) {
			for c := img.FirstChild(); c != nil; c = img.FirstChild() {
				parent.InsertBefore(parent, img, c)
			}
			parent.RemoveChild(parent, img)
			continue
		}
		link := ast.NewLink()
		link.Destination, link.Title = img.Destination, img.Title
		for c := img.FirstChild(); c != nil; c = img.FirstChild() {
			link.AppendChild(link, c)
		}
		parent.ReplaceChild(parent, img, link)
	}
}

func insideLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		switch p.(type) {
		case *ast.Link, *ast.AutoLink:
			return true
		}
	}
	return false
}

// markdownMaxDepth is the deepest nesting of block containers
// (blockquotes, list items) that a line may open for its text to be
// rendered as markdown.
const markdownMaxDepth = 32

// nestedTooDeep reports whether a line of src opens more than
// markdownMaxDepth block containers: it counts the blockquote ('>') and
// list item markers ("-", "*", "+" or a number with "." or ")", each
// followed by a blank or the line's end) that start the line, blanks
// between them skipped. That over-counts a little (a thematic break, a
// marker that is really an indented code block) and never under-counts
// the nesting a line opens; nesting by indentation alone is bounded by the
// text's length (depth d needs about d² blanks).
func nestedTooDeep(src string) bool {
	for len(src) > 0 {
		line := src
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = ""
		}
		depth := 0
		for {
			line = strings.TrimLeft(line, " \t")
			n := containerMarker(line)
			if n == 0 {
				break
			}
			if depth++; depth > markdownMaxDepth {
				return true
			}
			line = line[n:]
		}
	}
	return false
}

// containerMarker is the length of the blockquote or list item marker that
// starts s, or 0.
func containerMarker(s string) int {
	blankOrEnd := func(i int) bool { return i == len(s) || s[i] == ' ' || s[i] == '\t' }
	switch {
	case s == "":
		return 0
	case s[0] == '>':
		return 1
	case strings.IndexByte("-*+", s[0]) >= 0 && blankOrEnd(1):
		return 1
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')') && blankOrEnd(i+1) {
		return i + 1
	}
	return 0
}
