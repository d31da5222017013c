package text

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"zonostream/internal/golden"
)

// TestSymbolsTable compares the table with ../shared/golden/text/symbols.tsv,
// where the last row for a code point is the id it gets.
func TestSymbolsTable(t *testing.T) {
	f, err := os.Open(filepath.Join(golden.Pack(t, "text"), "symbols.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[rune]int32{}
	rows := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		id, err1 := strconv.Atoi(fields[0])
		cp, err2 := strconv.ParseInt(strings.TrimPrefix(fields[1], "U+"), 16, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad row %q", sc.Text())
		}
		want[rune(cp)] = int32(id)
		rows++
	}
	if rows != VocabSize-4 {
		t.Errorf("symbols.tsv has %d rows, want %d", rows, VocabSize-4)
	}
	if len(symbolIDs) != len(want) {
		t.Errorf("%d distinct symbols, golden has %d", len(symbolIDs), len(want))
	}
	for r, id := range want {
		if got := SymbolID(r); got != id {
			t.Errorf("SymbolID(%U) = %d, want %d", r, got, id)
		}
	}
}

func TestTokenize(t *testing.T) {
	cases := []struct {
		in   string
		want []int32
	}{
		{"", []int32{BosID, EosID}},
		{"'", []int32{BosID, 187, EosID}},      // the later duplicate wins
		{"n̩", []int32{BosID, 67, 186, EosID}}, // combining mark is its own code point
		{"ɐ̃", []int32{BosID, 81, UnkID, EosID}},
		{"a\tb\u00a0", []int32{BosID, 54, UnkID, 55, UnkID, EosID}},
		{"ᵻ ", []int32{BosID, 188, 21, EosID}},
	}
	for _, c := range cases {
		if got := Tokenize(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokenize(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
