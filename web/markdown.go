package web

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Markdown written by agents and people (item bodies, questions, answers) is
// rendered in two safe steps: goldmark without its "unsafe" option drops raw
// HTML and dangerous link schemes, and bluemonday's UGC policy sanitises the
// result again, so a bug in either alone cannot inject markup.
var (
	markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))
	ugc      = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.RequireNoFollowOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(true)
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
