package app

import (
	"strings"
	"testing"

	"zonostream/engine"
)

func sentenceTexts(d *Document) []string {
	var out []string
	for _, s := range d.Sentences {
		out = append(out, d.Text[s.Start:s.End])
	}
	return out
}

func TestDocumentMarkdownReadsAsSpeech(t *testing.T) {
	src := "# Chapter *One*\n\nSome *emphasis*, __strong__ words and a snake_case_name, \\*starred\\* &amp; [a link](https://example.com) and ![a picture](p.png).\nThe paragraph goes on `with code` and <b>markup</b>.\n\n- first item\n- second item\n\n```go\nfunc main() {}\n```\n\n> A quote.\n\n---\n\n<div>hidden</div>\n\nSee <https://zonos.example> now.\n"
	d, err := NewDocument("notes.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Chapter One",
		"Some emphasis, strong words and a snake_case_name, *starred* & a link and a picture.",
		"The paragraph goes on with code and markup.",
		"first item",
		"second item",
		"func main() {}",
		"A quote.",
		"See https://zonos.example now.",
	}
	got := sentenceTexts(d)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sentences\n got %q\nwant %q\ntext %q", got, want, d.Text)
	}
	for _, bad := range []string{"#", "](", "```", "__", "<div", "hidden"} {
		if strings.Contains(d.Text, bad) {
			t.Errorf("speech text keeps %q: %q", bad, d.Text)
		}
	}
}

func TestDocumentPlainTextJoinsWrappedLines(t *testing.T) {
	src := "\uFEFFIt was a bright cold day in April, and the clocks\r\nwere striking thirteen. Winston Smith\r\nslipped quickly through the doors:\r\n- a list item\r\n- another one\r\n\r\n\r\n\r\n  A new paragraph \"in quotes.\"  Then more!\nA heading without a stop\n\nLast line"
	d, err := NewDocument("book.txt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"It was a bright cold day in April, and the clocks were striking thirteen.",
		"Winston Smith slipped quickly through the doors:",
		"- a list item",
		"- another one",
		"A new paragraph \"in quotes.\"",
		"Then more!",
		"A heading without a stop",
		"Last line",
	}
	got := sentenceTexts(d)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sentences\n got %q\nwant %q", got, want)
	}
	if strings.Contains(d.Text, "\r") || strings.Contains(d.Text, "\n\n\n") || strings.HasPrefix(d.Text, "\uFEFF") {
		t.Fatalf("text not tidied: %q", d.Text)
	}
}

func TestDocumentRefusesWhatItCannotRead(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"picture.png", png, "picture.png is not a text file"},
		{"doc.pdf", []byte("%PDF-1.7\n\x01\x02\x03 binary"), "doc.pdf is not a text file"},
		{"latin1.txt", []byte("caf\xe9 au lait"), "latin1.txt is not UTF-8 text (byte 0xE9 at offset 3"},
		{"empty.md", []byte("  \n\n"), "empty.md has no text to read"},
		{"marks.txt", []byte("... !!! ---"), "marks.txt has no text to read"},
		{"huge.txt", []byte(strings.Repeat("a", maxDocumentFile+1)), "the reader takes texts up to"},
		{"long.txt", []byte(strings.Repeat("Word. ", engine.MaxTextBytes/6+10)), "of text: the reader takes texts up to"},
	} {
		_, err := NewDocument(c.name, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestDocumentSentenceAt(t *testing.T) {
	d, err := NewDocument("t.txt", []byte("One. Two!  Three?\nFour"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sentenceTexts(d); strings.Join(got, "|") != "One.|Two!|Three?|Four" {
		t.Fatalf("sentences %q", got)
	}
	for _, c := range []struct{ off, want int }{
		{0, 0}, {3, 0}, {4, 0}, {5, 1}, {9, 1}, {10, 1}, {11, 2}, {17, 2}, {18, 3}, {100, 3},
	} {
		if got := d.SentenceAt(c.off); got != c.want {
			t.Errorf("SentenceAt(%d) = %d, want %d", c.off, got, c.want)
		}
	}
}
