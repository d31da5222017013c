package text

import "strings"

// Marks are Zonos' _punctuation, the marks phonemizer preserves (FACTS §2).
// SPACE is one of them, so espeak only ever sees single words.
const Marks = ";:,.!?¡¿—…\"«»“”() *~-/\\&"

func isMark(r rune) bool { return strings.ContainsRune(Marks, r) }

// isPySpace is Python's Unicode whitespace (str.isspace and re's \s), which
// both Go's \s and unicode.IsSpace differ from (FACTS §2).
func isPySpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0D, r >= 0x1C && r <= 0x20, r == 0x85, r == 0xA0,
		r == 0x1680, r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029,
		r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// markPos says where a mark run sits, as phonemizer records it.
type markPos byte

const (
	markBegin  markPos = 'B' // first run, at the start of the text
	markInside markPos = 'I'
	markEnd    markPos = 'E' // last run, at the end of the text
)

type markRun struct {
	text string
	pos  markPos
}

// splitMarks is phonemizer's Punctuation.preserve for one utterance: the
// words between mark runs (a mark run is a maximal run of whitespace and
// marks holding at least one mark) and the runs themselves. A text that is
// one mark run gives no chunks and that run; the empty text gives nothing.
func splitMarks(s string) (chunks []string, marks []markRun) {
	type span struct{ start, end int }
	var runs []span
	start, hasMark := -1, false
	flush := func(end int) {
		if start >= 0 && hasMark {
			runs = append(runs, span{start, end})
		}
		start, hasMark = -1, false
	}
	for i, r := range s {
		m, w := isMark(r), isPySpace(r)
		if !m && !w {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
		hasMark = hasMark || m
	}
	flush(len(s))

	prev := 0
	for k, r := range runs {
		if c := s[prev:r.start]; c != "" {
			chunks = append(chunks, c)
		}
		pos := markInside
		if k == 0 && r.start == 0 {
			pos = markBegin
		} else if k == len(runs)-1 && r.end == len(s) {
			pos = markEnd
		}
		marks = append(marks, markRun{s[r.start:r.end], pos})
		prev = r.end
	}
	if c := s[prev:]; c != "" {
		chunks = append(chunks, c)
	}
	return chunks, marks
}

// restoreMarks is phonemizer's Punctuation.restore with strip=True: it puts
// the mark runs back, verbatim, between the phonemized chunks (FACTS §5).
// It is called with at least one chunk.
func restoreMarks(phonemized []string, marks []markRun) string {
	// acc grows by appending, so long texts stay linear; only the first run
	// can be a B (prepended) one.
	acc, rest := []byte(phonemized[0]), phonemized[1:]
	for _, m := range marks {
		if n := len(acc); n > 0 && acc[n-1] == ' ' {
			acc = acc[:n-1] // exactly one trailing space
		}
		switch m.pos {
		case markBegin:
			acc = append([]byte(m.text), acc...)
		case markEnd:
			acc = append(acc, m.text...)
		default:
			acc = append(acc, m.text...)
			if len(rest) > 0 {
				acc = append(acc, rest[0]...)
				rest = rest[1:]
			}
		}
	}
	return string(acc)
}
