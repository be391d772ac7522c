package web

import (
	"bytes"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdownLinear is the markdown parser of the UI: goldmark with GFM,
// whose work grows linearly with the text. Goldmark's own link and code
// span parsers rescan the rest of a line or paragraph at every attempt
// that fails, so a few thousand unclosed "[a](" took most of a second to
// render, on every view of a page that shows them. Here goldmark's link
// parser is asked only what it can answer without rereading (linearLinks,
// mdlinks.go), its code span parser likewise (linearCodeSpans), and a
// table is made only when its cells are about as many as its bytes
// (boundedTables); everything else is goldmark's.
func markdownLinear(opts ...parser.Option) goldmark.Markdown {
	inline := []util.PrioritizedValue{
		util.Prioritized(linearCodeSpans{parser.NewCodeSpanParser()}, 100),
		util.Prioritized(newLinearLinks(), 200),
		util.Prioritized(parser.NewAutoLinkParser(), 300),
		util.Prioritized(parser.NewRawHTMLParser(), 400),
		util.Prioritized(parser.NewEmphasisParser(), 500),
		util.Prioritized(extension.NewLinkifyParser(), 999),
	}
	p := parser.NewParser(append([]parser.Option{
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(inline...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	}, opts...)...)
	// GFM (extension.GFM) less its linkify, which is above, and with
	// its tables bounded (boundedTables).
	return goldmark.New(goldmark.WithParser(p),
		goldmark.WithExtensions(boundedTableExtension{}, extension.Strikethrough, extension.TaskList))
}

// boundedTableExtension is GFM's table extension (extension.Table) whose
// paragraph transformer is boundedTables and whose AST transformer is
// tablePipes.
type boundedTableExtension struct{}

func (boundedTableExtension) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(
		parser.WithParagraphTransformers(util.Prioritized(boundedTables{extension.NewTableParagraphTransformer()}, 200)),
		parser.WithASTTransformers(util.Prioritized(tablePipes{}, 0)),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(extension.NewTableHTMLRenderer(), 500)))
}

// boundedTables makes a table of a paragraph, as GFM does, only when the
// cells the table could hold are about as many as the paragraph's bytes.
// GFM pads every row to the header's width, so a header of a thousand
// columns over a thousand one-cell rows (7 KB) was a million cells, nine
// seconds to render. A table written by hand has a cell for about every
// byte or more; such a paragraph stays a paragraph (its text).
type boundedTables struct{ parser.ParagraphTransformer }

func (b boundedTables) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := node.Lines()
	widest, size := 0, 0
	for i := range lines.Len() {
		seg := lines.At(i)
		line := seg.Value(reader.Source())
		size += len(line)
		widest = max(widest, bytes.Count(line, []byte("|"))+1)
	}
	if widest*lines.Len() > 2*size+1024 {
		return
	}
	b.ParagraphTransformer.Transform(node, reader, pc)
}

// linearCodeSpans is goldmark's code span parser asked only when the span
// can close. An opening run of n backticks closes at the next run of
// exactly n; goldmark looks for it to the end of the paragraph, and again
// for every run that cannot close ("`a“b```c…" took the square of its
// length). The first time a block triggers it, the rest of the block is
// read once for the last run of each length (codeRuns); a run with no
// run of its length after it is text at once, and one that can close is
// parsed by goldmark, whose scan ends at the closing run and consumes what
// it read.
type linearCodeSpans struct{ parser.InlineParser }

// codeRunsKey holds the codeRuns of the block being parsed.
var codeRunsKey = parser.NewContextKey()

// codeRuns are the backtick runs of one block: the start of the last run
// of each length.
type codeRuns struct {
	last map[int]int
}

// CloseBlock forgets the block's runs (goldmark reuses its reader for the
// next block).
func (s linearCodeSpans) CloseBlock(_ ast.Node, _ text.Reader, pc parser.Context) {
	pc.Set(codeRunsKey, nil)
}

func (s linearCodeSpans) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, seg := block.PeekLine()
	n := 0
	for n < len(line) && line[n] == '`' {
		n++
	}
	runs, ok := pc.Get(codeRunsKey).(*codeRuns)
	if !ok {
		runs = readCodeRuns(block, pc)
		pc.Set(codeRunsKey, runs)
	}
	if last, ok := runs.last[n]; !ok || last <= seg.Start {
		block.Advance(n)
		return ast.NewTextSegment(seg.WithStop(seg.Start + n))
	}
	node := s.InlineParser.Parse(parent, block, pc)
	_, at := block.Position()
	countSteps(pc, at.Start-seg.Start) // goldmark's scan: what it consumed
	return node
}

// readCodeRuns reads block from its position to its end, leaving the
// position unchanged, for the start of the last backtick run of each
// length.
func readCodeRuns(block text.Reader, pc parser.Context) *codeRuns {
	runs := &codeRuns{last: map[int]int{}}
	l, pos := block.Position()
	defer block.SetPosition(l, pos)
	for {
		line, seg := block.PeekLine()
		if line == nil {
			return runs
		}
		countSteps(pc, len(line))
		for i := 0; i < len(line); {
			if line[i] != '`' {
				i++
				continue
			}
			j := i
			for j < len(line) && line[j] == '`' {
				j++
			}
			runs.last[j-i] = seg.Start + i
			i = j
		}
		block.AdvanceLine()
	}
}

// stepsKey holds, in a parse's context, the *int that counts the bytes the
// scanners of this file and mdlinks.go look at, and that goldmark's link
// and code span parsers read when asked (a test's measure of their
// work; nil: not counted).
var stepsKey = parser.NewContextKey()

func countSteps(pc parser.Context, n int) {
	if c, ok := pc.Get(stepsKey).(*int); ok {
		*c += n
	}
}

// tablePipes does what GFM's table AST transformer does, in one walk: in
// the code spans of a table's cells, "\\|" is a '|' (the backslash only
// kept the pipe from ending the cell). Goldmark's compared every text of
// every such cell with the escaped pipes of every cell of the document:
// the square of their number (1.8 s for 72 KB of "| `\\|` |" rows).
type tablePipes struct{}

func (tablePipes) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if _, ok := n.(*extast.TableCell); !ok {
			return ast.WalkContinue, nil
		}
		_ = ast.Walk(n, func(span ast.Node, entering bool) (ast.WalkStatus, error) {
			if entering && span.Kind() == ast.KindCodeSpan {
				unescapePipes(span, src, pc)
			}
			return ast.WalkContinue, nil
		})
		return ast.WalkSkipChildren, nil
	})
}

// unescapePipes splits each text of a code span at every "\\|", leaving
// out the backslash.
func unescapePipes(span ast.Node, src []byte, pc parser.Context) {
	for c := span.FirstChild(); c != nil; {
		next := c.NextSibling()
		t, ok := c.(*ast.Text)
		if !ok {
			c = next
			continue
		}
		n, seg := ast.Node(t), t.Segment
		countSteps(pc, seg.Len())
		for pos := seg.Start; pos+1 < seg.Stop; pos++ {
			if src[pos] != '\\' || src[pos+1] != '|' {
				continue
			}
			cur := n.(*ast.Text).Segment
			n1 := ast.NewRawTextSegment(cur.WithStop(pos))
			n2 := ast.NewRawTextSegment(cur.WithStart(pos + 1))
			span.InsertAfter(span, n, n1)
			span.InsertAfter(span, n1, n2)
			span.RemoveChild(span, n)
			n = n2
		}
		c = next
	}
}
