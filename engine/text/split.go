package text

import (
	"strings"
	"unicode/utf8"
)

// Split cuts long text into consecutive pieces for streaming synthesis. The
// pieces concatenate to text exactly (every byte, whitespace included, lands
// in one piece) and each costs at most budget where the text allows.
//
// It packs whole sentences into pieces while cost(piece) ≤ budget. A sentence
// over budget is cut into clauses (after , ; : and dashes) packed the same
// way, and a clause over budget into words. A single word over budget is
// never cut, so it makes a piece of its own. Whitespace stays with the text
// before it; a paragraph break also ends a sentence. budget ≤ 0 means no
// limit. cost is typically PhonemeCost(language); it should grow with the
// text.
func Split(text string, budget int, cost func(string) int) []string {
	if text == "" {
		return nil
	}
	if budget <= 0 {
		return []string{text}
	}
	var out []string
	pack(text, levelSentence, budget, cost, &out)
	return out
}

// PhonemeCost measures a piece by its number of phoneme ids (without BOS and
// EOS), the length the model conditions on. Pieces the front end refuses
// count one per character.
func PhonemeCost(language string) func(string) int {
	return func(s string) int {
		r, err := Reference(s, language)
		if err != nil {
			return utf8.RuneCountInString(s)
		}
		return len(r.IDs) - 2
	}
}

type splitLevel int

const (
	levelSentence splitLevel = iota
	levelClause
	levelWord
)

// pack appends to out the pieces of text at a level: consecutive segments
// merged while they fit, oversized ones cut at the next level.
func pack(text string, level splitLevel, budget int, cost func(string) int, out *[]string) {
	cur := ""
	flush := func() {
		if cur != "" {
			*out = append(*out, cur)
			cur = ""
		}
	}
	for _, seg := range segments(text, level) {
		if cur != "" && cost(cur+seg) <= budget {
			cur += seg
			continue
		}
		flush()
		if level < levelWord && cost(seg) > budget {
			pack(seg, level+1, budget, cost, out)
			continue
		}
		cur = seg
	}
	flush()
}

// segments cuts text at every boundary of a level; the segments concatenate
// to text.
func segments(text string, level splitLevel) []string {
	type pos struct {
		r   rune
		off int
	}
	var rs []pos
	for off, r := range text {
		rs = append(rs, pos{r, off})
	}
	var segs []string
	last := 0
	for j := 1; j < len(rs); j++ {
		if isBoundary(rs[j-1].r, rs[j].r, func(k int) (rune, bool) {
			if i := j - 1 - k; i >= 0 {
				return rs[i].r, true
			}
			return 0, false
		}, level) {
			segs = append(segs, text[last:rs[j].off])
			last = rs[j].off
		}
	}
	return append(segs, text[last:])
}

// isBoundary says whether a segment of the level may start at rune cur.
// back(k) is the k-th rune before cur (back(0) == prev).
func isBoundary(prev, cur rune, back func(int) (rune, bool), level splitLevel) bool {
	if isPySpace(cur) {
		return false
	}
	k := 0
	if isPySpace(prev) {
		if level == levelWord {
			return true
		}
		for r, ok := back(k); ok && isPySpace(r); r, ok = back(k) {
			if r == '\n' || r == '\u2029' {
				return true // a line or paragraph break ends a sentence
			}
			k++
		}
		for r, ok := back(k); ok && strings.ContainsRune(closers, r); r, ok = back(k) {
			k++
		}
		r, ok := back(k)
		return ok && (strings.ContainsRune(sentenceEnds, r) ||
			level == levelClause && strings.ContainsRune(clauseEnds, r))
	}
	// No space: only CJK punctuation and dashes end a segment.
	if strings.ContainsRune(closers, cur) || strings.ContainsRune(sentenceEnds+clauseEnds, cur) {
		return false
	}
	for r, ok := back(k); ok && strings.ContainsRune(closers, r); r, ok = back(k) {
		k++
	}
	r, ok := back(k)
	return ok && (strings.ContainsRune(cjkSentenceEnds, r) ||
		level == levelClause && strings.ContainsRune(cjkClauseEnds, r))
}

const (
	cjkSentenceEnds = "。！？"
	cjkClauseEnds   = "，、；：—"
	sentenceEnds    = ".!?…‼⁇⁈⁉" + cjkSentenceEnds
	clauseEnds      = ",;:—–" + cjkClauseEnds
	closers         = "\"'”’»)]}」』）"
)
