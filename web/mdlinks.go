package web

import (
	"sort"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// linearLinks is goldmark's link parser asked to close a link only when
// it can, or when failing costs it nothing.
//
// Goldmark, at every ']', first walks every node after the matching '['
// looking for a link inside (links do not nest), then, when a '(' follows,
// reads a destination to the first blank or unbalanced ')' of the line and
// a title to its closing quote or parenthesis, to the paragraph's end if
// need be. Every attempt that fails is read again by the next one: "[a]("
// repeated read the rest of the line at every "](", "[[[[…]]]]" walked
// the nodes after the opener at every ']'.
//
// Here the rest of the block is read once, at its first bracket, into
// linkFacts: where each destination and title that could start in it
// would end. With them an inline link is known to close, or not, before
// goldmark reads it. A link that closes is goldmark's to parse (what it
// reads, it consumes). When the attempt is bound to fail (a link was made
// inside the label, or no "(…)" closes and neither the label nor a "[…]"
// after it names a reference definition), goldmark is shown a link right after the '[' so its walk stops
// at once, and its failure (the brackets become text) is what it would
// have been. When only the "(…)" fails but the label names a reference,
// goldmark is shown no '(' after the ']', and makes the shortcut reference
// link it would have made after reading the "(…)" in vain.
type linearLinks struct{ parser.InlineParser }

func newLinearLinks() linearLinks { return linearLinks{parser.NewLinkParser()} }

// linkGuards off makes linearLinks delegate every attempt as it comes (a
// test's way to show what the guards spare).
var linkGuards = true

// linksKey holds the linkBlock of the block being parsed.
var linksKey = parser.NewContextKey()

// linkBlock is what linearLinks knows of the block being parsed: the open
// brackets in the order goldmark keeps them (each ']' closes the last),
// the '[' of the last link made, and the facts of the rest of the block.
type linkBlock struct {
	open     []openBracket
	lastLink int
	facts    *linkFacts
}

type openBracket struct {
	node  ast.Node
	start int // the '[' or the '!' of "!["
	label int // where the label's text starts
	image bool
}

func (s linearLinks) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	pc.Set(linksKey, nil)
	if cb, ok := s.InlineParser.(parser.CloseBlocker); ok {
		cb.CloseBlock(parent, block, pc)
	}
}

func (s linearLinks) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	lb, ok := pc.Get(linksKey).(*linkBlock)
	if !ok {
		lb = &linkBlock{lastLink: -1}
		pc.Set(linksKey, lb)
	}
	if lb.facts == nil {
		lb.facts = readLinkFacts(block, pc)
	}
	line, seg := block.PeekLine()
	if line[0] != ']' {
		n := s.InlineParser.Parse(parent, block, pc)
		if n != nil {
			image := line[0] == '!'
			label := seg.Start + 1
			if image {
				label++
			}
			lb.open = append(lb.open, openBracket{node: n, start: seg.Start, label: label, image: image})
		}
		return n
	}
	if len(lb.open) == 0 {
		return s.InlineParser.Parse(parent, block, pc)
	}
	top := lb.open[len(lb.open)-1]
	lb.open = lb.open[:len(lb.open)-1]
	countSteps(pc, 1)

	// What follows the ']', and whether an inline link closes there.
	l, pos := block.Position()
	block.Advance(1)
	next := block.Peek()
	closes, read := false, 0
	if next == '(' {
		closes, read = lb.facts.inlineLink(block)
	}
	block.SetPosition(l, pos)

	if !linkGuards {
		countSteps(pc, read+walkLength(top))
		return s.made(lb, top, s.InlineParser.Parse(parent, block, pc))
	}
	// A link whose '[' is after top's was made while top was open: it is
	// inside top's label (a bracket opened before top and closed after it
	// would have closed top first), where goldmark's walk finds it.
	fails := !top.image && lb.lastLink > top.start
	if !fails && !closes {
		switch {
		case len(pc.References()) == 0:
			fails = true
		case next == '[':
			fails = !lb.facts.namesFullReference(top.label, seg.Start, pc)
		default:
			fails = !lb.facts.namesReference(top.label, seg.Start, pc)
		}
	}
	if closes && !fails {
		countSteps(pc, read)
		return s.made(lb, top, s.InlineParser.Parse(parent, block, pc))
	}
	var stop ast.Node
	if fails && top.node.Parent() != nil {
		stop = ast.NewLink()
		top.node.Parent().InsertAfter(top.node.Parent(), top.node, stop)
	}
	reader := block
	if next == '(' {
		reader = noParenAt{Reader: block, at: seg.Start + 1}
	}
	n := s.InlineParser.Parse(parent, reader, pc)
	if stop != nil {
		stop.Parent().RemoveChild(stop.Parent(), stop)
	}
	return s.made(lb, top, n)
}

// made notes the link n, if it is one, that the bracket top opened.
func (linearLinks) made(lb *linkBlock, top openBracket, n ast.Node) ast.Node {
	if _, ok := n.(*ast.Link); ok {
		lb.lastLink = top.start
	}
	return n
}

// namesReference reports whether the label from start to end names a
// reference definition, as goldmark asks (at most 999 bytes, the block's
// lines joined). A label holding an unescaped bracket names none (a
// definition's label cannot hold one), and is not looked up: nested
// brackets asked up to 999 bytes at every ']'. The labels looked up hold
// no bracket, so no two of them overlap.
func (f *linkFacts) namesReference(start, end int, pc parser.Context) bool {
	a, b := f.at(start), f.at(end)
	if a < 0 || b < 0 || b-a > 999 || (f.bracket[a] >= 0 && int(f.bracket[a]) < b) {
		return false
	}
	countSteps(pc, b-a)
	_, ok := pc.Reference(util.ToLinkReference(f.b[a:b]))
	return ok
}

// namesFullReference reports whether the "[…]" after the ']' at end
// makes a link of the label from start to end, as goldmark reads it: a
// full reference ("[a][ref]"), a collapsed one ("[ref][]"), or, when the
// second label does not close, the first as a shortcut reference.
func (f *linkFacts) namesFullReference(start, end int, pc parser.Context) bool {
	k := f.at(end)
	if k < 0 || k+2 > len(f.b) {
		return false
	}
	k += 2 // after "]["
	j := f.bracket[k]
	if j < 0 || f.b[j] == '[' {
		return f.namesReference(start, end, pc)
	}
	label := f.b[k:j]
	if util.IsBlank(label) {
		return f.namesReference(start, end, pc)
	}
	if len(label) > 999 {
		return false
	}
	countSteps(pc, len(label))
	_, ok := pc.Reference(util.ToLinkReference(label))
	return ok
}

// at is the index in b of the source position pos (-1: not in b).
func (f *linkFacts) at(pos int) int {
	i := sort.Search(len(f.lineStart), func(i int) bool { return f.lineStart[i] > pos }) - 1
	if i < 0 {
		return -1
	}
	k := f.lineAt[i] + pos - f.lineStart[i]
	end := len(f.b)
	if i+1 < len(f.lineAt) {
		end = f.lineAt[i+1]
	}
	if k > end {
		return -1
	}
	return k
}

// walkLength is how many nodes goldmark's look for a link inside the
// label of top visits when there is none (counted only without guards).
func walkLength(top openBracket) int {
	n := 0
	_ = ast.Walk(top.node, func(ast.Node, bool) (ast.WalkStatus, error) { n++; return ast.WalkContinue, nil })
	for c := top.node.NextSibling(); c != nil; c = c.NextSibling() {
		_ = ast.Walk(c, func(_ ast.Node, entering bool) (ast.WalkStatus, error) {
			if entering {
				n++
			}
			return ast.WalkContinue, nil
		})
	}
	return n
}

// noParenAt is a block reader that shows no '(' at position at: goldmark
// then tries the label as a shortcut reference, as it does after a "(…)"
// that does not close.
type noParenAt struct {
	text.Reader
	at int
}

func (r noParenAt) Peek() byte {
	if _, pos := r.Position(); pos.Start == r.at && pos.Padding == 0 {
		return text.EOF
	}
	return r.Reader.Peek()
}

// linkFacts are, for the rest of a block, where the parts of an inline
// link starting at each byte would end, as goldmark reads them. The block's
// lines are laid end to end in b; a backslash and the punctuation it
// escapes are inert (neither counts).
type linkFacts struct {
	first     int   // the block line of b[0]
	lineStart []int // per line from first: its source start and index in b
	lineAt    []int
	b         []byte
	// Per byte: the end of its line; the next byte that is not a blank
	// (the block's end: len(b)); the next blank of its line; the first
	// unbalanced ')' of its line from it, or its line's end; the next
	// '>' of its line (-1: none); the next '"', '\'', '(' or ')' of
	// the block, and the next '[' or ']' (-1: none).
	lineEnd, nonBlank, blank, unbalanced, gt, dquote, squote, paren, bracket []int32
}

func readLinkFacts(block text.Reader, pc parser.Context) *linkFacts {
	f := &linkFacts{}
	l, pos := block.Position()
	f.first = l
	src := block.Source()
	for {
		line, seg := block.PeekLine()
		if line == nil {
			break
		}
		f.lineStart = append(f.lineStart, seg.Start)
		f.lineAt = append(f.lineAt, len(f.b))
		f.b = append(f.b, src[seg.Start:seg.Stop]...)
		block.AdvanceLine()
	}
	block.SetPosition(l, pos)
	countSteps(pc, len(f.b))

	n := len(f.b)
	mk := func() []int32 { return make([]int32, n+1) }
	f.lineEnd, f.nonBlank, f.blank, f.unbalanced, f.gt = mk(), mk(), mk(), mk(), mk()
	f.dquote, f.squote, f.paren, f.bracket = mk(), mk(), mk(), mk()
	inert := make([]bool, n)
	depth := make([]int32, n+1) // parentheses open before each byte, per line
	for li, at := range f.lineAt {
		end := n
		if li+1 < len(f.lineAt) {
			end = f.lineAt[li+1]
		}
		d := int32(0)
		for i := at; i < end; i++ {
			f.lineEnd[i] = int32(end)
			depth[i] = d
			switch c := f.b[i]; {
			case c == '\\' && i+1 < end && util.IsPunct(f.b[i+1]):
				inert[i], inert[i+1] = true, true
				depth[i+1] = d
				f.lineEnd[i+1] = int32(end)
				i++
			case c == '(':
				d++
			case c == ')':
				d--
			}
		}
		depth[end] = d
		// First unbalanced ')' from each byte: the next byte before which
		// fewer parentheses are open (a stack of candidates, right to left).
		stack := []int{end}
		for i := end - 1; i >= at; i-- {
			for len(stack) > 0 && depth[stack[len(stack)-1]] >= depth[i] {
				stack = stack[:len(stack)-1]
			}
			f.unbalanced[i] = int32(end)
			if len(stack) > 0 {
				f.unbalanced[i] = int32(stack[len(stack)-1] - 1)
			}
			stack = append(stack, i)
		}
		blank, gt := int32(end), int32(-1)
		for i := end - 1; i >= at; i-- {
			if util.IsSpace(f.b[i]) {
				blank = int32(i)
			}
			if f.b[i] == '>' && !inert[i] {
				gt = int32(i)
			}
			f.blank[i], f.gt[i] = blank, gt
		}
	}
	nonBlank, dq, sq, pa, br := int32(n), int32(-1), int32(-1), int32(-1), int32(-1)
	f.nonBlank[n], f.dquote[n], f.squote[n], f.paren[n], f.bracket[n], f.gt[n] = nonBlank, dq, sq, pa, br, -1
	for i := n - 1; i >= 0; i-- {
		c := f.b[i]
		if !util.IsSpace(c) {
			nonBlank = int32(i)
		}
		if !inert[i] {
			switch c {
			case '"':
				dq = int32(i)
			case '\'':
				sq = int32(i)
			case '(', ')':
				pa = int32(i)
			case '[', ']':
				br = int32(i)
			}
		}
		f.nonBlank[i], f.dquote[i], f.squote[i], f.paren[i], f.bracket[i] = nonBlank, dq, sq, pa, br
	}
	return f
}

// inlineLink reports whether the inline link whose '(' is at block's
// position closes, as goldmark's link parser reads it, and how many bytes
// goldmark reads to find out.
func (f *linkFacts) inlineLink(block text.Reader) (closes bool, read int) {
	l, pos := block.Position()
	if l < f.first || l-f.first >= len(f.lineAt) {
		return false, 0
	}
	n := len(f.b)
	p := f.lineAt[l-f.first] + pos.Start - f.lineStart[l-f.first] + 1 // after '('
	if p > n {
		return false, 0
	}
	q := int(f.nonBlank[p])
	read = q - p
	switch {
	case q >= n:
		return false, read
	case f.b[q] == ')':
		return true, read
	}
	var end int // after the destination
	if f.b[q] == '<' {
		if q+1 >= int(f.lineEnd[q]) || f.gt[q+1] < 0 {
			return false, read + int(f.lineEnd[q]) - q
		}
		end = int(f.gt[q+1]) + 1
	} else {
		end = int(min(f.blank[q], f.unbalanced[q]))
	}
	read += end - q
	t := int(f.nonBlank[end])
	read += t - end
	if t >= n {
		return false, read
	}
	var closer int32
	switch f.b[t] {
	case ')':
		return true, read
	case '"':
		closer = f.dquote[t+1]
	case '\'':
		closer = f.squote[t+1]
	case '(':
		if closer = f.paren[t+1]; closer >= 0 && f.b[closer] != ')' {
			return false, read + int(closer) - t
		}
	default:
		return false, read
	}
	if closer < 0 {
		return false, read + n - t
	}
	read += int(closer) - t
	u := int(f.nonBlank[closer+1])
	return u < n && f.b[u] == ')', read + u - int(closer)
}
