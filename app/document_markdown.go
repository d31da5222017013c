package app

import (
	"bytes"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdownSpeech is the text of a Markdown document as it should be read
// aloud: headings, paragraphs and list items each end with a line break
// (so each ends a sentence), emphasis and code marks go, a link or image
// reads as its text, the lines of a code block are kept without their
// fences, and raw HTML is left out. goldmark parses it (CommonMark), so
// an underscore inside a word or an escaped asterisk stays as written.
func markdownSpeech(src []byte) string {
	doc := goldmark.DefaultParser().Parse(gmtext.NewReader(src))
	var b bytes.Buffer
	endBlock := func(blank bool) {
		if b.Len() == 0 {
			return
		}
		if b.Bytes()[b.Len()-1] != '\n' {
			b.WriteByte('\n')
		}
		if blank {
			b.WriteByte('\n')
		}
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n := n.(type) {
		case *ast.Text:
			if entering {
				v := n.Segment.Value(src)
				if !n.IsRaw() {
					v = util.UnescapePunctuations(util.ResolveNumericReferences(util.ResolveEntityNames(v)))
				}
				b.Write(v)
				switch {
				case n.HardLineBreak():
					b.WriteByte('\n')
				case n.SoftLineBreak():
					b.WriteByte(' ')
				}
			}
		case *ast.String:
			if entering {
				b.Write(n.Value)
			}
		case *ast.AutoLink:
			if entering {
				b.Write(n.Label(src))
			}
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML, *ast.HTMLBlock:
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			if entering {
				endBlock(true)
				lines := n.Lines()
				for i := range lines.Len() {
					seg := lines.At(i)
					b.Write(seg.Value(src))
				}
				endBlock(true)
			}
			return ast.WalkSkipChildren, nil
		case *ast.Paragraph, *ast.Heading:
			if !entering {
				endBlock(true)
			}
		case *ast.TextBlock, *ast.ListItem:
			if !entering {
				endBlock(false)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}
