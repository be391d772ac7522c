package web

import (
	"bytes"
	"html/template"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
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
	markdown = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(imagesAsLinks{}, 100))),
	)
	ugc = func() *bluemonday.Policy {
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
