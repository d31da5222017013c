package text_test

import (
	"errors"
	"path/filepath"
	"testing"

	"zonostream/engine/text"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

func goldenCases(t *testing.T) []conformance.TextCase {
	t.Helper()
	cases, err := conformance.TextCases(filepath.Dir(golden.Pack(t, "text")))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestGolden runs every reference case (../shared/golden/text/cases.jsonl):
// normalised text, phonemes and ids must be identical.
func TestGolden(t *testing.T) {
	for i, c := range goldenCases(t) {
		o := conformance.CheckText(c)
		if !o.NormalizedOK {
			t.Errorf("case %d %q (%s): normalized\n got  %q\n want %q", i+1, c.Text, c.Language, o.Got.Normalized, c.Normalized)
		}
		if !o.PhonemesOK || !o.IDsOK {
			want := "<error>"
			if c.Phonemes != nil {
				want = *c.Phonemes
			}
			t.Errorf("case %d %q (%s): err=%v\n got  %q %v\n want %q %v", i+1, c.Text, c.Language, o.Err, o.Got.Phonemes, o.Got.IDs, want, c.IDs)
		}
	}
}

// TestConformance checks the lines `zonos conformance` prints for the pack.
func TestConformance(t *testing.T) {
	dir := filepath.Dir(golden.Pack(t, "text"))
	golden.Report(t, conformance.Text(dir))
}

// TestPrepareGolden: where Prepare accepts a golden text it returns the
// reference ids; where it refuses one, the error says why.
func TestPrepareGolden(t *testing.T) {
	for i, c := range goldenCases(t) {
		ids, ph, err := text.Prepare(c.Text, c.Language)
		if err != nil {
			if !errors.Is(err, text.ErrEmpty) && !errors.Is(err, text.ErrNothingToSay) {
				t.Errorf("case %d %q: unexpected error %v", i+1, c.Text, err)
			}
			t.Logf("case %d %q refused: %v", i+1, c.Text, err)
			continue
		}
		if c.Phonemes == nil || ph != *c.Phonemes || len(ids) != len(c.IDs) {
			t.Errorf("case %d %q: Prepare = %q, reference %v", i+1, c.Text, ph, c.Phonemes)
		}
	}
}
