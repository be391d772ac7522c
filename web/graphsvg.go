package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"
	"github.com/google/uuid"
)

// The dependency graph is laid out by Graphviz (dot), compiled to
// WebAssembly and run in-process by github.com/goccy/go-graphviz: no cgo and
// no external binary. Nodes are items coloured by state and linked to their
// pages; an arrow runs from a prerequisite to the item that waits for it
// (solid for a dependency, dashed from a child to its parent); the critical
// path is drawn in red.

// graphNode is an item in a picture.
type graphNode struct {
	ID       uuid.UUID
	Title    string
	State    string
	Href     string
	Focus    bool // the item the picture is about
	Critical bool // on the critical path
}

// graphEdge is an arrow from the item that must finish first (From) to the
// item that waits for it (To).
type graphEdge struct {
	From, To uuid.UUID
	Child    bool // From is a child of To
	Critical bool
}

// stateColours are the fill (tint) and stroke colours of each state; they
// match the chips in app.css.
var stateColours = map[string][2]string{
	"ready":     {"#dafbe1", "#1a7f37"},
	"leased":    {"#ddf4ff", "#0969da"},
	"blocked":   {"#eff2f5", "#59636e"},
	"attention": {"#fff1e5", "#bc4c00"},
	"done":      {"#fbefff", "#8250df"},
	"cancelled": {"#f6f8fa", "#818b98"},
}

const criticalColour = "#cf222e"

// graphviz's WebAssembly module is one global instance: layouts run one at
// a time.
var (
	gvMu   sync.Mutex
	gvInst *graphviz.Graphviz
)

// renderGraphSVG lays out the nodes and edges and returns the SVG element,
// ready to inline in a page. Titles reach the SVG only as escaped text and
// attribute values; node names are item ids.
// Vertical lays the graph out top to bottom (for narrow places) instead of
// left to right.
func renderGraphSVG(ctx context.Context, nodes []graphNode, edges []graphEdge, vertical bool) (template.HTML, error) {
	if len(nodes) == 0 {
		return "", nil
	}
	gvMu.Lock()
	defer gvMu.Unlock()
	if gvInst == nil {
		g, err := graphviz.New(ctx)
		if err != nil {
			return "", fmt.Errorf("web: start graphviz: %w", err)
		}
		gvInst = g
	}
	g, err := gvInst.Graph()
	if err != nil {
		return "", err
	}
	defer g.Close()
	rankdir := "LR"
	if vertical {
		rankdir = "TB"
	}
	for k, v := range map[string]string{
		"rankdir": rankdir, "nodesep": "0.25", "ranksep": "0.5", "bgcolor": "transparent",
		"fontname": "Helvetica,Arial,sans-serif", "pad": "0.1",
	} {
		if err := g.SafeSet(k, v, ""); err != nil {
			return "", err
		}
	}
	if len(nodes) > 80 {
		// Big pictures: fewer crossing-minimisation passes keep the
		// layout well under a second for a few hundred items.
		for k, v := range map[string]string{"mclimit": "0.3", "nslimit": "3", "nslimit1": "3", "searchsize": "10"} {
			if err := g.SafeSet(k, v, ""); err != nil {
				return "", err
			}
		}
	}
	byID := make(map[uuid.UUID]*graphviz.Node, len(nodes))
	for _, n := range nodes {
		gn, err := g.CreateNodeByName(n.ID.String())
		if err != nil {
			return "", err
		}
		colours, ok := stateColours[n.State]
		if !ok {
			colours = stateColours["blocked"]
		}
		stroke, pen := colours[1], "1.2"
		if n.Critical {
			stroke, pen = criticalColour, "2.2"
		}
		if n.Focus {
			pen = "3"
		}
		class := "st-" + n.State
		if n.Critical {
			class += " critical"
		}
		if n.Focus {
			class += " focus"
		}
		attrs := map[string]string{
			"id": "n-" + n.ID.String(), "class": class,
			"label":   graphLabel(n.Title, n.ID, n.State),
			"tooltip": dotEscape(n.Title),
			"shape":   "box", "style": "rounded,filled", "fillcolor": colours[0], "color": stroke, "penwidth": pen,
			"fontname": "Helvetica,Arial,sans-serif", "fontsize": "12.5", "fontcolor": "#1f2328",
			"margin": "0.14,0.07",
		}
		if n.Href != "" {
			attrs["URL"] = n.Href
			attrs["target"] = "_top"
		}
		for k, v := range attrs {
			if err := gn.SafeSet(k, v, ""); err != nil {
				return "", err
			}
		}
		byID[n.ID] = gn
	}
	for i, e := range edges {
		from, to := byID[e.From], byID[e.To]
		if from == nil || to == nil {
			continue
		}
		ge, err := g.CreateEdgeByName(fmt.Sprintf("e%d", i), from, to)
		if err != nil {
			return "", err
		}
		attrs := map[string]string{"color": "#8c959f", "arrowsize": "0.7", "penwidth": "1.1"}
		if e.Child {
			attrs["style"] = "dashed"
			attrs["tooltip"] = "child of"
		} else {
			attrs["tooltip"] = "needed by"
		}
		if e.Critical {
			attrs["color"], attrs["penwidth"] = criticalColour, "2.4"
			attrs["class"] = "critical"
		}
		for k, v := range attrs {
			if err := ge.SafeSet(k, v, ""); err != nil {
				return "", err
			}
		}
	}
	var buf bytes.Buffer
	if err := gvInst.Render(ctx, g, graphviz.SVG, &buf); err != nil {
		return "", fmt.Errorf("web: graphviz layout: %w", err)
	}
	return inlineSVG(buf.Bytes()), nil
}

var svgComment = regexp.MustCompile(`(?s)<!--.*?-->`)

// inlineSVG turns a standalone SVG document into an element for an HTML
// page: no XML prolog, doctype or comments.
func inlineSVG(doc []byte) template.HTML {
	s := string(doc)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = svgComment.ReplaceAllString(s, "")
	return template.HTML(s)
}

// graphLabel is a node's label: its title wrapped onto at most two short
// lines, then its short id and state.
func graphLabel(title string, id uuid.UUID, state string) string {
	lines := wrap(title, 30, 2)
	for i := range lines {
		lines[i] = dotEscape(lines[i])
	}
	return strings.Join(lines, `\n`) + `\n` + shortID(id) + " · " + state
}

// dotEscape makes text safe as a Graphviz string attribute: backslashes
// would otherwise start escape sequences (\N, \G, \l).
func dotEscape(s string) string {
	return strings.ReplaceAll(s, `\`, `\\`)
}

// wrap breaks s into at most max lines of about width runes, at spaces
// where it can, ending the last line with "…" when text was cut.
func wrap(s string, width, max int) []string {
	words := strings.Fields(s)
	var lines []string
	var cur []rune
	cut := false
	for i, w := range words {
		r := []rune(w)
		for len(r) > width { // an overlong word is split
			if len(cur) > 0 {
				lines, cur = append(lines, string(cur)), nil
			}
			lines, r = append(lines, string(r[:width])), r[width:]
		}
		switch {
		case len(cur) == 0:
			cur = r
		case len(cur)+1+len(r) <= width:
			cur = append(append(cur, ' '), r...)
		default:
			lines, cur = append(lines, string(cur)), r
		}
		if len(lines) >= max {
			cut = len(cur) > 0 || i < len(words)-1
			break
		}
	}
	if len(cur) > 0 && len(lines) < max {
		lines = append(lines, string(cur))
	}
	if len(lines) > max {
		lines, cut = lines[:max], true
	}
	if cut && len(lines) > 0 {
		last := []rune(lines[len(lines)-1])
		if len(last) > width-1 {
			last = last[:width-1]
		}
		lines[len(lines)-1] = string(last) + "…"
	}
	if len(lines) == 0 {
		lines = []string{""}
	}
	return lines
}
