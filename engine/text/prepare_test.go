package text

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPrepareBadInput: hostile input never crashes or hangs, and empty
// results are refused with an error before the model runs.
func TestPrepareBadInput(t *testing.T) {
	cases := []struct {
		name, text string
		want       error // nil: must succeed
	}{
		{"empty", "", ErrEmpty},
		{"spaces", "   ", ErrEmpty},
		{"newlines and tabs", "\n\t\r\n", ErrEmpty},
		{"nbsp and ideographic space", "\u00a0\u3000", ErrEmpty},
		{"punctuation only", "?!...", ErrNothingToSay},
		{"brackets only", "[]{}", ErrNothingToSay},
		{"emoji only", "😀🎉", nil}, // espeak names them ("grinning face")
		{"control characters", "a\x00b\x01c\x7f", nil},
		{"invalid UTF-8", "ab\xffcd", ErrInvalidUTF8},
		{"huge number", "1" + strings.Repeat("0", 40), ErrNumberTooLarge},
		{"stray comma money", "$,5", ErrMoneyFormat},
		{"ordinary", "Hello, world!", nil},
	}
	for _, c := range cases {
		ids, ph, err := Prepare(c.text, "en-us")
		switch {
		case c.want == nil && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: Prepare(%q) = %q, %v; want %v", c.name, c.text, ph, err, c.want)
		case err == nil && (len(ids) < 3 || ids[0] != BosID || ids[len(ids)-1] != EosID):
			t.Errorf("%s: ids %v", c.name, ids)
		}
	}
}

// TestPrepareLong phonemizes 100k characters of prose in one call.
func TestPrepareLong(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	unit := "The quick brown fox, in 1905, paid $5.50 for 3 eggs. "
	text := strings.Repeat(unit, n/len(unit)+1)[:n]
	ids, ph, err := Prepare(text, "en-us")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != utf8.RuneCountInString(ph)+2 || len(ids) < n/2 {
		t.Errorf("%d ids for %d characters", len(ids), n)
	}
	// One long word (no marks) goes to espeak as a single chunk.
	if _, _, err := Prepare(strings.Repeat("a", n/10), "en-us"); err != nil {
		t.Errorf("long word: %v", err)
	}
}

func FuzzPrepare(f *testing.F) {
	for _, s := range []string{
		"Hello world.", "In 1905, $5.50 & £9.99 — 21st!", "3,14 2.0.1 $1.2.3 $,5", "  \t\n ",
		"Keep\u00a0together, then\u00a0(apart).", "你好，世界。", "😀", "a\x00b", "\xff", "1ST 4st 00th",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, err := NormalizeNumbers(s)
		if err == nil && strings.ContainsAny(norm, "0123456789") {
			t.Fatalf("NormalizeNumbers(%q) = %q left ASCII digits", s, norm)
		}
		ids, ph, err := Prepare(s, "en-us")
		if err != nil {
			return
		}
		if len(ids) != utf8.RuneCountInString(ph)+2 || ids[0] != BosID || ids[len(ids)-1] != EosID {
			t.Fatalf("Prepare(%q): ids %v for phonemes %q", s, ids, ph)
		}
		for _, id := range ids {
			if id < 1 || id >= VocabSize {
				t.Fatalf("Prepare(%q): id %d out of range", s, id)
			}
		}
	})
}
