package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"zonostream/engine/text"
	"zonostream/internal/check"
)

// TextCase is one line of the text pack's cases.jsonl (see its README).
type TextCase struct {
	Text       string  `json:"text"`
	Language   string  `json:"language"`
	Normalized string  `json:"normalized"`
	Phonemes   *string `json:"phonemes"` // nil where the reference raised
	IDs        []int32 `json:"ids"`      // nil where the reference raised
	Error      string  `json:"error,omitempty"`
}

// TextCases reads the cases of <goldenDir>/text/cases.jsonl.
func TextCases(goldenDir string) ([]TextCase, error) {
	path := filepath.Join(goldenDir, "text", "cases.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []TextCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var c TextCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cases, nil
}

// TextOutcome compares text.Reference with one golden case.
type TextOutcome struct {
	Got                             text.Result
	Err                             error
	NormalizedOK, PhonemesOK, IDsOK bool
}

// CheckText runs text.Reference on a golden case. Where the reference
// raised, phonemes and ids match when ours fails too.
func CheckText(c TextCase) TextOutcome {
	var o TextOutcome
	o.Got, o.Err = text.Reference(c.Text, c.Language)
	o.NormalizedOK = o.Got.Normalized == c.Normalized
	if c.Phonemes == nil {
		o.PhonemesOK, o.IDsOK = o.Err != nil, o.Err != nil
		return o
	}
	if o.Err == nil {
		o.PhonemesOK = o.Got.Phonemes == *c.Phonemes
		o.IDsOK = slices.Equal(o.Got.IDs, c.IDs)
	}
	return o
}

// Text checks engine/text on every case of <goldenDir>/text/cases.jsonl and
// reports how many match in normalised text, phonemes and ids (all must).
func Text(goldenDir string) []check.Result {
	cases, err := TextCases(goldenDir)
	if err != nil {
		return []check.Result{check.Failure("text", "ids", err)}
	}
	var norm, phon, ids int
	var firstBad string
	for i, c := range cases {
		o := CheckText(c)
		if o.NormalizedOK {
			norm++
		}
		if o.PhonemesOK {
			phon++
		}
		if o.IDsOK {
			ids++
		}
		if firstBad == "" && !(o.NormalizedOK && o.PhonemesOK && o.IDsOK) {
			firstBad = fmt.Sprintf("first mismatch: case %d %.40q (%s)", i+1, c.Text, c.Language)
		}
	}
	rs := []check.Result{
		check.Count("text", "normalized", norm, len(cases)),
		check.Count("text", "phonemes", phon, len(cases)),
		check.Count("text", "ids", ids, len(cases)),
	}
	for i := range rs {
		if rs[i].Status == check.Fail && firstBad != "" {
			rs[i].Detail = firstBad
		}
	}
	return rs
}
