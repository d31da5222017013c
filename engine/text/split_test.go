package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// runeCost is a cheap stand-in for PhonemeCost in tests of the cutting.
func runeCost(s string) int { return utf8.RuneCountInString(s) }

func TestSplit(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		budget int
		want   []string
	}{
		{"empty", "", 10, nil},
		{"no limit", "One. Two.", 0, []string{"One. Two."}},
		{"fits", "One. Two.", 100, []string{"One. Two."}},
		{"sentences", "One two. Three four! Five six? Seven.", 14,
			[]string{"One two. ", "Three four! ", "Five six? ", "Seven."}},
		{"packs sentences", "A. B. C. D.", 6, []string{"A. B. ", "C. D."}},
		{"clauses", "This is long, with clauses; and more: here.", 16,
			[]string{"This is long, ", "with clauses; ", "and more: here."}},
		{"words", "averyveryverylongword and more words", 12,
			[]string{"averyveryverylongword ", "and more ", "words"}},
		{"quotes close sentences", `He said "Stop." Then left.`, 16,
			[]string{`He said "Stop." `, "Then left."}},
		{"decimal is not a sentence end", "Pi is 3.14 today. Yes.", 18,
			[]string{"Pi is 3.14 today. ", "Yes."}},
		{"paragraphs", "Line one\n\nLine two", 10, []string{"Line one\n\n", "Line two"}},
		{"leading and trailing space", "  Hi there.  Bye now.  ", 13,
			[]string{"  Hi there.  ", "Bye now.  "}},
		{"cjk", "你好。世界，再见。", 4, []string{"你好。", "世界，", "再见。"}},
		{"em dash", "wait—what is going on here", 12, []string{"wait—", "what is ", "going on ", "here"}},
	}
	for _, c := range cases {
		got := Split(c.text, c.budget, runeCost)
		if strings.Join(got, "") != c.text {
			t.Errorf("%s: pieces %q do not concatenate to %q", c.name, got, c.text)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("%s: Split(%q, %d)\n got  %q\n want %q", c.name, c.text, c.budget, got, c.want)
		}
	}
}

// TestSplitPhonemeBudget cuts a golden-sized paragraph under a real phoneme
// budget: every piece but a lone word fits, and the text round-trips.
func TestSplitPhonemeBudget(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog. It would be nice to have time for testing, indeed. " +
		"In 1905, the company sold 2,500 units at $5.50 each; by the 21st century, it was gone.\n\n" +
		"How are you doing today? Wow! That's amazing!"
	cost := PhonemeCost("en-us")
	for _, budget := range []int{1, 20, 40, 80, 1000} {
		pieces := Split(text, budget, cost)
		if got := strings.Join(pieces, ""); got != text {
			t.Fatalf("budget %d: round trip lost text:\n%q", budget, got)
		}
		for _, p := range pieces {
			if c := cost(p); c > budget && len(strings.Fields(p)) > 1 {
				t.Errorf("budget %d: piece %q costs %d phonemes", budget, p, c)
			}
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "One. Two.", "a,b;c:d—e", "你好。世界", "  \n\n x. ", "\xff. \xfe"} {
		f.Add(s, 8)
	}
	f.Fuzz(func(t *testing.T, s string, budget int) {
		pieces := Split(s, budget%64, runeCost)
		if strings.Join(pieces, "") != s {
			t.Fatalf("Split(%q, %d) = %q does not round-trip", s, budget%64, pieces)
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("Split(%q) gave an empty piece", s)
			}
		}
	})
}
