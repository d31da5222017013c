package app

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"zonostream/engine"
	"zonostream/engine/text"
)

// Document is a text opened in the reading view: what is shown and spoken
// (Markdown syntax taken out, hard-wrapped lines joined) and its sentences
// as byte spans of Text. The engine's part offsets index the same Text, so
// a part maps straight onto the sentences it covers.
type Document struct {
	Name      string // the file's base name, or "pasted text"
	Text      string
	Sentences []Span // in order, each from its first to its last non-space character
}

// Span is the byte range [Start, End) of a sentence in Document.Text.
type Span struct{ Start, End int }

// maxDocumentFile bounds what is read of a file before it is turned into
// speech text: Markdown syntax may take some room, so twice the engine's
// text limit (the text itself is checked after conversion).
const maxDocumentFile = 2 * engine.MaxTextBytes

// NewDocument turns the contents of a file (or pasted text) into a
// Document. Files named *.md or *.markdown are read as Markdown, anything
// else as plain text. Binary data, text that is not UTF-8, an empty text
// and a text over the engine's limit are refused with a message that names
// the file and says what the reader takes.
func NewDocument(name string, data []byte) (*Document, error) {
	if len(data) > maxDocumentFile {
		return nil, fmt.Errorf("%s is %s: the reader takes texts up to %s", name, byteSize(len(data)), byteSize(engine.MaxTextBytes))
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a UTF-8 byte order mark
	if i := bytes.IndexByte(data, 0); i >= 0 || looksBinary(data) {
		return nil, fmt.Errorf("%s is not a text file (it holds binary data): the reader opens plain text (.txt) and Markdown (.md) files in UTF-8", name)
	}
	if !utf8.Valid(data) {
		off := invalidUTF8At(data)
		return nil, fmt.Errorf("%s is not UTF-8 text (byte 0x%02X at offset %d is not UTF-8): save it as UTF-8 and open it again", name, data[off], off)
	}
	src := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	var speech string
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		speech = tidyLines(markdownSpeech([]byte(src)), false)
	default:
		speech = tidyLines(src, true)
	}
	if len(speech) > engine.MaxTextBytes {
		return nil, fmt.Errorf("%s holds %s of text: the reader takes texts up to %s", name, byteSize(len(speech)), byteSize(engine.MaxTextBytes))
	}
	d := &Document{Name: name, Text: speech, Sentences: splitSentences(speech)}
	if !d.hasWords() {
		return nil, fmt.Errorf("%s has no text to read", name)
	}
	return d, nil
}

// looksBinary says whether data has the control characters of a binary
// format (text uses only tab, line feed, form feed and carriage return).
func looksBinary(data []byte) bool {
	n := 0
	for _, c := range data[:min(len(data), 8192)] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' || c == 0x7F {
			n++
		}
	}
	return n > 0
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

func (d *Document) hasWords() bool {
	return strings.IndexFunc(d.Text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// byteSize formats n bytes for messages: "3.2 MiB", "64 KiB".
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MiB"
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// SentenceAt is the index of the sentence holding byte offset off, or of
// the one before it when off falls between sentences (the first before
// the first sentence).
func (d *Document) SentenceAt(off int) int {
	i := sort.Search(len(d.Sentences), func(i int) bool { return d.Sentences[i].Start > off })
	return max(i-1, 0)
}

// Sentence ends and the closing quotes and brackets that may follow them,
// as the engine's text splitter knows them (engine/text): tidyLines keeps
// a line break after them.
const (
	sentenceEnds    = ".!?…‼⁇⁈⁉。！？"
	sentenceClosers = "\"'”’»)]}」』）"
)

// splitSentences cuts text where the engine cuts sentences
// (text.FirstSentence: a sentence end followed by whitespace, or a line
// break), so every part of the stream starts at a sentence the view
// shows. Whitespace between sentences belongs to none.
func splitSentences(t string) []Span {
	var out []Span
	for off := 0; off < len(t); {
		n := text.FirstSentence(t[off:], true)
		if n <= 0 {
			n = len(t) - off
		}
		seg := t[off : off+n]
		if body := strings.TrimSpace(seg); body != "" {
			start := off + strings.Index(seg, body)
			out = append(out, Span{start, start + len(body)})
		}
		off += n
	}
	return out
}

// tidyLines trims every line and keeps one blank line between paragraphs.
// With join it also joins hard-wrapped lines: inside a paragraph a line
// break becomes a space, unless the line ends a sentence or a clause (.,
// !, ?, :, ;) or the next line starts a list item, so a plain text wrapped
// at 72 columns is read as flowing sentences rather than one sentence a
// line (the engine ends a sentence at every line break).
func tidyLines(s string, join bool) string {
	lines := strings.Split(s, "\n")
	var b strings.Builder
	b.Grow(len(s))
	blank := true // at a paragraph start
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			if !blank {
				b.WriteString("\n")
				blank = true
			}
			continue
		}
		if !blank {
			if !join || breaksLine(lines[i-1], l) {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		} else if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		blank = false
	}
	return strings.TrimRight(b.String(), "\n")
}

// breaksLine says whether the line break between prev and next stays.
func breaksLine(prev, next string) bool {
	prev = strings.TrimRightFunc(prev, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(sentenceClosers, r) })
	if last, _ := utf8.DecodeLastRuneInString(prev); strings.ContainsRune(sentenceEnds+":;", last) {
		return true
	}
	return isListItem(next)
}

// isListItem reports whether a line starts with a bullet or a number and
// a dot or parenthesis ("- a", "• b", "3. c", "2) d").
func isListItem(l string) bool {
	if len(l) >= 2 && strings.ContainsRune("-*+", rune(l[0])) && l[1] == ' ' || strings.HasPrefix(l, "• ") {
		return true
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	return i > 0 && i < 4 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' '
}
