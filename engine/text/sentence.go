package text

import (
	"strings"
	"unicode/utf8"
)

// FirstSentence returns the length in bytes of the first sentence of text,
// with the whitespace after it, once it is known to be complete; 0 while it
// may still go on. It cuts where Split cuts sentences, so a text read whole
// and the same text read as it arrives make the same sentences.
//
// A sentence is complete when the next one has begun, when it ends in
// sentence punctuation (closing quotes and brackets included) followed by
// whitespace or a line break, and, if final (no more text will come), at
// the end of text. The middle rule is what lets text that arrives while it
// is spoken (a chat model's output) start speaking a sentence before the
// next one arrives.
func FirstSentence(text string, final bool) int {
	var seen []rune // the runes before the one being looked at
	back := func(k int) (rune, bool) {
		if i := len(seen) - 1 - k; i >= 0 {
			return seen[i], true
		}
		return 0, false
	}
	for off, r := range text {
		if len(seen) > 0 && isBoundary(seen[len(seen)-1], r, back, levelSentence) {
			return off
		}
		seen = append(seen, r)
	}
	if final || endsSentence(text) {
		return len(text)
	}
	return 0
}

// endsSentence reports whether text, as it stands, ends a sentence that no
// later text can continue: sentence punctuation (and closers) followed by
// whitespace, whitespace holding a line break, or CJK sentence punctuation,
// which needs no space after it.
func endsSentence(text string) bool {
	body := strings.TrimRightFunc(text, isPySpace)
	if body == "" {
		return false
	}
	trailing := text[len(body):]
	if strings.ContainsAny(trailing, "\n\u2029") {
		return true
	}
	core := strings.TrimRight(body, closers)
	r, _ := utf8.DecodeLastRuneInString(core)
	if r == utf8.RuneError {
		return false
	}
	if trailing == "" {
		return body == core && strings.ContainsRune(cjkSentenceEnds, r)
	}
	return strings.ContainsRune(sentenceEnds, r)
}

// LastBreak returns the offset just after the last whitespace or clause
// or sentence mark in text (CJK ones included), 0 when it has none: where a
// run of text too long to wait for its sentence end is cut so no word is
// split.
func LastBreak(text string) int {
	i := strings.LastIndexFunc(text, func(r rune) bool {
		return isPySpace(r) || strings.ContainsRune(sentenceEnds+clauseEnds, r)
	})
	if i < 0 {
		return 0
	}
	_, n := utf8.DecodeRuneInString(text[i:])
	return i + n
}
