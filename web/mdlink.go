// This file is goldmark's link parser (github.com/yuin/goldmark v1.8.7,
// parser/link.go), Copyright (c) 2019 Yusuke Inuzuka, under the MIT
// License (the notice is at the end of this file), changed so that its
// work grows linearly with the text it parses (see markdownLinear):
//
//   - a link destination nests at most maxLinkParens parentheses, and one
//     in pointy brackets ends at an unescaped '<' (cmark's rules): "[a]("
//     repeated scanned the rest of the line at every "](";
//   - a title in parentheses ends at an unescaped '(' (the CommonMark
//     rule), found before the closing one is looked for: "[a](b (" repeated
//     scanned to the paragraph's end at every title;
//   - a title in quotes is looked for only when an unescaped quote of its
//     kind follows in the block (quoteFollows);
//   - "is there a link inside this link's text" is a comparison with the
//     start of the last link made (linkMadeAfter) instead of a walk of
//     every node after the opening bracket: "[[[[…]]]]" walked them at
//     every ']'.
//
// Everything else is goldmark's, so links render as they did.

package web

import (
	"fmt"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

var linkLabelStateKey = parser.NewContextKey()

type linkLabelState struct {
	ast.BaseInline

	Segment text.Segment

	IsImage bool

	Prev *linkLabelState

	Next *linkLabelState

	First *linkLabelState

	Last *linkLabelState
}

func newLinkLabelState(segment text.Segment, isImage bool) *linkLabelState {
	return &linkLabelState{
		Segment: segment,
		IsImage: isImage,
	}
}

func (s *linkLabelState) Text(source []byte) []byte {
	return s.Segment.Value(source)
}

func (s *linkLabelState) Dump(source []byte, level int) {
	fmt.Printf("%slinkLabelState: \"%s\"\n", strings.Repeat("    ", level), s.Text(source))
}

var kindLinkLabelState = ast.NewNodeKind("LinkLabelState")

func (s *linkLabelState) Kind() ast.NodeKind {
	return kindLinkLabelState
}

func linkLabelStateLength(v *linkLabelState) int {
	if v == nil || v.Last == nil || v.First == nil {
		return 0
	}
	return v.Last.Segment.Stop - v.First.Segment.Start
}

func pushLinkLabelState(pc parser.Context, v *linkLabelState) {
	tlist := pc.Get(linkLabelStateKey)
	var list *linkLabelState
	if tlist == nil {
		list = v
		v.First = v
		v.Last = v
		pc.Set(linkLabelStateKey, list)
	} else {
		list = tlist.(*linkLabelState)
		l := list.Last
		list.Last = v
		l.Next = v
		v.Prev = l
	}
}

func removeLinkLabelState(pc parser.Context, d *linkLabelState) {
	tlist := pc.Get(linkLabelStateKey)
	var list *linkLabelState
	if tlist == nil {
		return
	}
	list = tlist.(*linkLabelState)

	if d.Prev == nil {
		list = d.Next
		if list != nil {
			list.First = d
			list.Last = d.Last
			list.Prev = nil
			pc.Set(linkLabelStateKey, list)
		} else {
			pc.Set(linkLabelStateKey, nil)
		}
	} else {
		d.Prev.Next = d.Next
		if d.Next != nil {
			d.Next.Prev = d.Prev
		}
	}
	if list != nil && d.Next == nil {
		list.Last = d.Prev
	}
	d.Next = nil
	d.Prev = nil
	d.First = nil
	d.Last = nil
}

type linkParser struct {
}

var defaultLinkParser = &linkParser{}

// newLinkParser returns the InlineParser of links: goldmark's, made linear.
func newLinkParser() parser.InlineParser {
	return defaultLinkParser
}

func (s *linkParser) Trigger() []byte {
	return []byte{'!', '[', ']'}
}

var linkBottom = parser.NewContextKey()

func (s *linkParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, segment := block.PeekLine()
	if line[0] == '!' {
		if len(line) > 1 && line[1] == '[' {
			block.Advance(1)
			pushLinkBottom(pc)
			return processLinkLabelOpen(block, segment.Start+1, true, pc)
		}
		return nil
	}
	if line[0] == '[' {
		pushLinkBottom(pc)
		return processLinkLabelOpen(block, segment.Start, false, pc)
	}

	// line[0] == ']'
	tlist := pc.Get(linkLabelStateKey)
	if tlist == nil {
		return nil
	}
	last := tlist.(*linkLabelState).Last
	if last == nil {
		_ = popLinkBottom(pc)
		return nil
	}
	block.Advance(1)
	removeLinkLabelState(pc, last)
	// CommonMark spec says:
	//  > A link label can have at most 999 characters inside the square brackets.
	if linkLabelStateLength(tlist.(*linkLabelState)) > 998 {
		ast.MergeOrReplaceTextSegment(last.Parent(), last, last.Segment)
		_ = popLinkBottom(pc)
		return nil
	}

	if !last.IsImage && linkMadeAfter(pc, last.Segment.Start) { // a link in a link text is not allowed
		ast.MergeOrReplaceTextSegment(last.Parent(), last, last.Segment)
		_ = popLinkBottom(pc)
		return nil
	}

	c := block.Peek()
	l, pos := block.Position()
	var link *ast.Link
	var hasValue bool
	switch c {
	case '(':
		link = s.parseLink(parent, last, block, pc)
	case '[':
		link, hasValue = s.parseReferenceLink(parent, last, block, pc)
		if link == nil && hasValue {
			ast.MergeOrReplaceTextSegment(last.Parent(), last, last.Segment)
			_ = popLinkBottom(pc)
			return nil
		}
	}

	if link == nil {
		// maybe shortcut reference link
		block.SetPosition(l, pos)
		ssegment := text.NewSegment(last.Segment.Stop, segment.Start)
		maybeReference := block.Value(ssegment)
		// CommonMark spec says:
		//  > A link label can have at most 999 characters inside the square brackets.
		if len(maybeReference) > 999 {
			ast.MergeOrReplaceTextSegment(last.Parent(), last, last.Segment)
			_ = popLinkBottom(pc)
			return nil
		}

		ref, ok := pc.Reference(util.ToLinkReference(maybeReference))
		if !ok {
			ast.MergeOrReplaceTextSegment(last.Parent(), last, last.Segment)
			_ = popLinkBottom(pc)
			return nil
		}
		link = ast.NewLink()
		s.processLinkLabel(parent, link, last, pc)
		link.Title = ref.Title()
		link.Destination = ref.Destination()
		link.Reference = ast.NewReferenceLink(ast.ReferenceLinkShortcut, maybeReference)
	}
	var n ast.Node
	if last.IsImage {
		last.Parent().RemoveChild(last.Parent(), last)
		n = ast.NewImage(link)
	} else {
		last.Parent().RemoveChild(last.Parent(), last)
		n = link
		pc.Set(linkMadeKey, last.Segment.Start)
	}
	n.(interface{ SetPos(int) }).SetPos(last.Segment.Start)
	return n
}

// linkMadeKey holds the start (the '[') of the last link the block's
// parse made.
var linkMadeKey = parser.NewContextKey()

// linkMadeAfter reports whether the block's parse made a link whose '['
// is after start: a link closed while the bracket at start was open, so
// inside its text (goldmark walked the text's nodes for one). Links are
// made when their ']' is read, and a bracket opened before start and
// closed after it would have closed the one at start first.
func linkMadeAfter(pc parser.Context, start int) bool {
	last, ok := pc.Get(linkMadeKey).(int)
	return ok && last > start
}

func processLinkLabelOpen(block text.Reader, pos int, isImage bool, pc parser.Context) *linkLabelState {
	start := pos
	if isImage {
		start--
	}
	state := newLinkLabelState(text.NewSegment(start, pos+1), isImage)
	pushLinkLabelState(pc, state)
	block.Advance(1)
	return state
}

func (s *linkParser) processLinkLabel(parent ast.Node, link *ast.Link, last *linkLabelState, pc parser.Context) {
	bottom := popLinkBottom(pc)
	parser.ProcessDelimiters(bottom, pc)
	for c := last.NextSibling(); c != nil; {
		next := c.NextSibling()
		parent.RemoveChild(parent, c)
		link.AppendChild(link, c)
		c = next
	}
}

var linkFindClosureOptions text.FindClosureOptions = text.FindClosureOptions{
	Nesting: false,
	Newline: true,
	Advance: true,
}

func (s *linkParser) parseReferenceLink(parent ast.Node, last *linkLabelState,
	block text.Reader, pc parser.Context) (*ast.Link, bool) {
	_, orgpos := block.Position()
	block.Advance(1) // skip '['
	segments, found := block.FindClosure('[', ']', linkFindClosureOptions)
	if !found {
		return nil, false
	}

	var maybeReference []byte
	refType := ast.ReferenceLinkFull
	if segments.Len() == 1 { // avoid allocate a new byte slice
		maybeReference = block.Value(segments.At(0))
	} else {
		maybeReference = []byte{}
		for i := range segments.Len() {
			s := segments.At(i)
			maybeReference = append(maybeReference, block.Value(s)...)
		}
	}
	if util.IsBlank(maybeReference) { // collapsed reference link
		s := text.NewSegment(last.Segment.Stop, orgpos.Start-1)
		maybeReference = block.Value(s)
		refType = ast.ReferenceLinkCollapsed
	}
	// CommonMark spec says:
	//  > A link label can have at most 999 characters inside the square brackets.
	if len(maybeReference) > 999 {
		return nil, true
	}

	ref, ok := pc.Reference(util.ToLinkReference(maybeReference))
	if !ok {
		return nil, true
	}

	link := ast.NewLink()
	s.processLinkLabel(parent, link, last, pc)
	link.Title = ref.Title()
	link.Destination = ref.Destination()
	link.Reference = ast.NewReferenceLink(refType, maybeReference)
	return link, true
}

func (s *linkParser) parseLink(parent ast.Node, last *linkLabelState, block text.Reader, pc parser.Context) *ast.Link {
	block.Advance(1) // skip '('
	block.SkipSpaces()
	var title []byte
	var destination []byte
	var ok bool
	if block.Peek() == ')' { // empty link like '[link]()'
		block.Advance(1)
	} else {
		destination, ok = parseLinkDestination(block, pc)
		if !ok {
			return nil
		}
		block.SkipSpaces()
		if block.Peek() == ')' {
			block.Advance(1)
		} else {
			title, ok = parseLinkTitle(block, pc)
			if !ok {
				return nil
			}
			block.SkipSpaces()
			if block.Peek() == ')' {
				block.Advance(1)
			} else {
				return nil
			}
		}
	}

	link := ast.NewLink()
	s.processLinkLabel(parent, link, last, pc)
	link.Destination = destination
	link.Title = title
	return link
}

func parseLinkDestination(block text.Reader, pc parser.Context) ([]byte, bool) {
	block.SkipSpaces()
	line, _ := block.PeekLine()
	if block.Peek() == '<' {
		i := 1
		defer func() { countSteps(pc, i) }()
		for i < len(line) {
			c := line[i]
			if c == '\\' && i < len(line)-1 && util.IsPunct(line[i+1]) {
				i += 2
				continue
			} else if c == '>' {
				block.Advance(i + 1)
				return line[1:i], true
			} else if c == '<' {
				return nil, false // not a destination: "[a](<" repeated stops here
			}
			i++
		}
		return nil, false
	}
	opened := 0
	i := 0
	defer func() { countSteps(pc, i) }()
	for i < len(line) {
		c := line[i]
		if c == '\\' && i < len(line)-1 && util.IsPunct(line[i+1]) {
			i += 2
			continue
		} else if c == '(' {
			if opened++; opened > maxLinkParens {
				return nil, false
			}
		} else if c == ')' {
			opened--
			if opened < 0 {
				break
			}
		} else if util.IsSpace(c) {
			break
		}
		i++
	}
	block.Advance(i)
	return line[:i], len(line[:i]) != 0
}

// maxLinkParens is how many parentheses a link destination may nest
// (cmark's limit; CommonMark asks for at least three).
const maxLinkParens = 32

func parseLinkTitle(block text.Reader, pc parser.Context) ([]byte, bool) {
	block.SkipSpaces()
	opener := block.Peek()
	if opener != '"' && opener != '\'' && opener != '(' {
		return nil, false
	}
	closer := opener
	if opener == '(' {
		closer = ')'
	}
	block.Advance(1)
	if opener == '(' && !parenTitleCloses(block, pc) {
		return nil, false
	}
	if opener != '(' && !quoteFollows(block, pc, opener) {
		return nil, false
	}
	_, before := block.Position()
	segments, found := block.FindClosure(opener, closer, linkFindClosureOptions)
	_, after := block.Position()
	countSteps(pc, after.Start-before.Start)
	if found {
		if segments.Len() == 1 {
			return block.Value(segments.At(0)), true
		}
		var title []byte
		for i := range segments.Len() {
			s := segments.At(i)
			title = append(title, block.Value(s)...)
		}
		return title, true
	}
	return nil, false
}

func pushLinkBottom(pc parser.Context) {
	bottoms := pc.Get(linkBottom)
	b := pc.LastDelimiter()
	if bottoms == nil {
		pc.Set(linkBottom, b)
		return
	}
	if s, ok := bottoms.([]ast.Node); ok {
		pc.Set(linkBottom, append(s, b))
		return
	}
	pc.Set(linkBottom, []ast.Node{bottoms.(ast.Node), b})
}

func popLinkBottom(pc parser.Context) ast.Node {
	bottoms := pc.Get(linkBottom)
	if bottoms == nil {
		return nil
	}
	if v, ok := bottoms.(ast.Node); ok {
		pc.Set(linkBottom, nil)
		return v
	}
	s := bottoms.([]ast.Node)
	v := s[len(s)-1]
	n := s[0 : len(s)-1]
	switch len(n) {
	case 0:
		pc.Set(linkBottom, nil)
	case 1:
		pc.Set(linkBottom, n[0])
	default:
		pc.Set(linkBottom, s[0:len(s)-1])
	}
	return v
}

func (s *linkParser) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	pc.Set(linkBottom, nil)
	pc.Set(linkMadeKey, nil)
	pc.Set(quotesKey, nil)
	tlist := pc.Get(linkLabelStateKey)
	if tlist == nil {
		return
	}
	for s := tlist.(*linkLabelState); s != nil; {
		next := s.Next
		removeLinkLabelState(pc, s)
		s.Parent().ReplaceChild(s.Parent(), s, ast.NewTextSegment(s.Segment))
		s = next
	}
}

// parenTitleCloses reports whether the title in parentheses starting at
// block's position has its ')' before any unescaped '(' (which a title in
// parentheses may not hold), leaving the position unchanged. It reads up
// to the first parenthesis: a title that cannot close fails there, not at
// the paragraph's end.
func parenTitleCloses(block text.Reader, pc parser.Context) bool {
	l, pos := block.Position()
	defer block.SetPosition(l, pos)
	for {
		line, _ := block.PeekLine()
		if line == nil {
			return false
		}
		for i := 0; i < len(line); i++ {
			countSteps(pc, 1)
			switch line[i] {
			case '\\':
				i++
			case '(':
				return false
			case ')':
				return true
			}
		}
		block.AdvanceLine()
	}
}

// quotesKey holds, in a block's parse, the start of the last unescaped
// '"' and '\” of the rest of the block (quotes).
var quotesKey = parser.NewContextKey()

// quoteFollows reports whether an unescaped quote closes the title quote
// opens at block's position: whether the block holds one after it. The
// first title of a block reads the rest of the block once for the last
// quote of each kind; without it goldmark's search for the closing quote
// read to the block's end at every title that could not close.
func quoteFollows(block text.Reader, pc parser.Context, quote byte) bool {
	_, seg := block.Position()
	last, ok := pc.Get(quotesKey).(*[2]int)
	if !ok {
		last = &[2]int{-1, -1}
		l, pos := block.Position()
		for {
			line, ls := block.PeekLine()
			if line == nil {
				break
			}
			countSteps(pc, len(line))
			for i := 0; i < len(line); i++ {
				switch line[i] {
				case '\\':
					i++
				case '"':
					last[0] = ls.Start + i
				case '\'':
					last[1] = ls.Start + i
				}
			}
			block.AdvanceLine()
		}
		block.SetPosition(l, pos)
		pc.Set(quotesKey, last)
	}
	if quote == '"' {
		return last[0] >= seg.Start
	}
	return last[1] >= seg.Start
}

/*
MIT License

Copyright (c) 2019 Yusuke Inuzuka

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
*/
