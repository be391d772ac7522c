package web

import (
	"context"
	"fmt"
	"html/template"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The dependency graph is laid out in Go (graphlayout.go) and written as
// SVG here. Nodes are items coloured by state and linked to their
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
	"cancelled": {"#f6f8fa", "#656d76"},
}

const criticalColour = "#cf222e"

// Sizes of the picture, in pixels.
const (
	charWidth   = 6.6  // an average character of the labels' font
	lineHeight  = 15.0 // one label line
	nodePadding = 10.0 // inside a box, left and right
	minNodeSide = 80.0
	arrowLength = 7.0
	picturePad  = 6.0
)

// renderGraphSVG lays out the nodes and edges and returns the SVG element,
// ready to inline in a page. Titles reach the SVG only as escaped text and
// attribute values. Vertical lays the graph out top to bottom (for narrow
// places) instead of left to right. The caller bounds the graph's size
// (see Drawings); the layout stops when ctx is done. Width is the
// picture's natural width in pixels.
func renderGraphSVG(ctx context.Context, nodes []graphNode, edges []graphEdge, vertical bool) (svg template.HTML, width float64, err error) {
	if len(nodes) == 0 {
		return "", 0, nil
	}
	index := make(map[uuid.UUID]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	labels := make([][]string, len(nodes))
	g := layoutGraph{size: make([][2]float64, len(nodes)), rankGap: 48, nodeGap: 16}
	if vertical {
		g.rankGap, g.nodeGap = 32, 14
	}
	for i, n := range nodes {
		labels[i] = graphLabel(n.Title, n.ID, n.State)
		w := 0
		for _, l := range labels[i] {
			w = max(w, utf8.RuneCountInString(l))
		}
		size := [2]float64{max(float64(w)*charWidth+2*nodePadding, minNodeSide), float64(len(labels[i]))*lineHeight + 12}
		if vertical {
			size[0], size[1] = size[1], size[0]
		}
		g.size[i] = size
	}
	drawn := make([]graphEdge, 0, len(edges))
	for _, e := range edges {
		from, ok1 := index[e.From]
		to, ok2 := index[e.To]
		if ok1 && ok2 && from != to {
			g.edges = append(g.edges, [2]int{from, to})
			drawn = append(drawn, e)
		}
	}
	res, err := layout(ctx, g, ranks(len(nodes), g.edges))
	if err != nil {
		return "", 0, err
	}
	xy := func(p [2]float64) (float64, float64) {
		if vertical {
			return p[1] + picturePad, p[0] + picturePad
		}
		return p[0] + picturePad, p[1] + picturePad
	}
	w, h := xy(res.extent)
	w, h = w+picturePad, h+picturePad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="Dependency graph">`, w, h, w, h)
	for i, e := range drawn {
		writeEdge(&b, e, res.paths[i], xy, vertical)
	}
	for i, n := range nodes {
		writeNode(&b, n, labels[i], res.centre[i], g.size[i], xy, vertical)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String()), w, nil
}

// writeEdge draws an arrow along its points: a curve leaving and entering
// each point along the levels' direction, and an arrowhead.
func writeEdge(b *strings.Builder, e graphEdge, pts [][2]float64, xy func([2]float64) (float64, float64), vertical bool) {
	if len(pts) < 2 {
		return
	}
	colour, pen, class, tip := "#8c959f", "1.1", "edge", "needed by"
	if e.Child {
		tip = "child of"
	}
	if e.Critical {
		colour, pen, class = criticalColour, "2.4", "edge critical"
	}
	// Stop the line where the arrowhead begins.
	last, prev := pts[len(pts)-1], pts[len(pts)-2]
	dir := 1.0
	if last[0] < prev[0] {
		dir = -1
	}
	end := [2]float64{last[0] - dir*arrowLength, last[1]}
	fmt.Fprintf(b, `<g class="%s"><title>%s</title><path d="`, class, tip)
	x, y := xy(pts[0])
	fmt.Fprintf(b, "M%.1f,%.1f", x, y)
	for i := 1; i < len(pts); i++ {
		a, c := pts[i-1], pts[i]
		if i == len(pts)-1 {
			c = end
		}
		mid := (c[0] - a[0]) / 2
		x1, y1 := xy([2]float64{a[0] + mid, a[1]})
		x2, y2 := xy([2]float64{c[0] - mid, c[1]})
		x3, y3 := xy(c)
		fmt.Fprintf(b, " C%.1f,%.1f %.1f,%.1f %.1f,%.1f", x1, y1, x2, y2, x3, y3)
	}
	dash := ""
	if e.Child {
		dash = ` stroke-dasharray="5,3"`
	}
	fmt.Fprintf(b, `" fill="none" stroke="%s" stroke-width="%s"%s/>`, colour, pen, dash)
	tx, ty := xy(last)
	l1x, l1y := xy([2]float64{end[0], end[1] - 3.5})
	l2x, l2y := xy([2]float64{end[0], end[1] + 3.5})
	fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" stroke="%s"/></g>`, tx, ty, l1x, l1y, l2x, l2y, colour, colour)
}

// writeNode draws an item: a rounded box coloured by state, linked to the
// item's page, with its label lines.
func writeNode(b *strings.Builder, n graphNode, lines []string, centre, size [2]float64, xy func([2]float64) (float64, float64), vertical bool) {
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
	class := "node st-" + n.State
	if n.Critical {
		class += " critical"
	}
	if n.Focus {
		class += " focus"
	}
	esc := template.HTMLEscapeString
	cx, cy := xy(centre)
	w, h := size[0], size[1]
	if vertical {
		w, h = h, w
	}
	fmt.Fprintf(b, `<g id="n-%s" class="%s"><title>%s</title>`, n.ID, esc(class), esc(n.Title))
	if n.Href != "" {
		fmt.Fprintf(b, `<a xlink:href="%s" href="%s" target="_top">`, esc(n.Href), esc(n.Href))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" fill="%s" stroke="%s" stroke-width="%s"/>`,
		cx-w/2, cy-h/2, w, h, colours[0], stroke, pen)
	top := cy - float64(len(lines))*lineHeight/2 + lineHeight*0.75
	for i, l := range lines {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-family="Helvetica,Arial,sans-serif" font-size="12.5" fill="#1f2328">%s</text>`,
			cx, top+float64(i)*lineHeight, esc(l))
	}
	if n.Href != "" {
		b.WriteString("</a>")
	}
	b.WriteString("</g>")
}

// graphLabel is a node's label lines: its title wrapped onto at most two
// short lines, then its short id and state.
func graphLabel(title string, id uuid.UUID, state string) []string {
	return append(wrap(title, 30, 2), shortID(id)+" · "+state)
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
