package text

import (
	"strings"
	"testing"
)

func TestFirstSentence(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		final bool
		want  string
	}{
		{"next has begun", "One two. Three", false, "One two. "},
		{"ends with space", "One two. ", false, "One two. "},
		{"no space yet", "One two.", false, ""},
		{"no space, final", "One two.", true, "One two."},
		{"mid sentence", "One two three", false, ""},
		{"mid sentence, final", "One two three", true, "One two three"},
		{"decimal", "Pi is 3.14", false, ""},
		{"decimal then end", "Pi is 3.14 today. Yes", false, "Pi is 3.14 today. "},
		{"closing quote", `He said "Stop." `, false, `He said "Stop." `},
		{"line break", "A heading\n", false, "A heading\n"},
		{"paragraph", "Line one\n\nLine two", false, "Line one\n\n"},
		{"leading space", "  Hi there.  Bye", false, "  Hi there.  "},
		{"cjk", "你好。世界", false, "你好。"},
		{"cjk at end", "你好。", false, "你好。"},
		{"only space", "   ", false, ""},
		{"empty", "", false, ""},
	}
	for _, c := range cases {
		if got := c.text[:FirstSentence(c.text, c.final)]; got != c.want {
			t.Errorf("%s: FirstSentence(%q, %v) = %q, want %q", c.name, c.text, c.final, got, c.want)
		}
	}
}

// TestFirstSentenceAgreesWithSplit: taking sentences one by one from the
// front cuts a text where Split's sentence level does, so reading a text
// whole and reading it as it arrives speak the same sentences.
func TestFirstSentenceAgreesWithSplit(t *testing.T) {
	text := `Hello there. He said "Stop." Then left! Pi is 3.14 today… Really?` + "\n\nA new paragraph; with a clause. 你好。世界。 End"
	var got []string
	for rest := text; rest != ""; {
		n := FirstSentence(rest, true)
		if n == 0 {
			t.Fatalf("no sentence in %q", rest)
		}
		got = append(got, rest[:n])
		rest = rest[n:]
	}
	want := segments(text, levelSentence)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sentences\n got %q\nwant %q", got, want)
	}
}

func TestLastBreak(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{{"no spaces", 3}, {"nospace", 0}, {"two words here", 10}, {"tab\there", 4}, {"", 0},
		{"a,b,c", 4}, {"你好，世界", len("你好，")}, {"end.x", 4}} {
		if got := LastBreak(c.text); got != c.want {
			t.Errorf("LastBreak(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}
