package text

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidUTF8 reports input that is not valid UTF-8.
var ErrInvalidUTF8 = errors.New("text: input is not valid UTF-8")

// ErrNothingToSay reports text whose phonemes hold no sound: only
// punctuation, whitespace or symbols espeak does not read.
var ErrNothingToSay = errors.New("text: nothing to pronounce")

// Normalize is Zonos' clean() for one text: NormalizeNumbers for every
// supported language. Japanese, the one language the reference cleans
// differently, is refused (ErrJapanese).
func Normalize(text, language string) (string, error) {
	if err := CheckLanguage(language); err != nil {
		return "", err
	}
	return NormalizeNumbers(text)
}

// Result is the front end's output for one text, stage by stage.
type Result struct {
	Normalized string  // after number normalisation
	Phonemes   string  // phonemizer's output
	IDs        []int32 // BosID, symbol ids, EosID
}

// Reference runs the reference pipeline exactly: Normalize, Phonemize,
// Tokenize. It fails where the reference fails (ErrEmpty for "", the
// normaliser's errors) and otherwise returns what Zonos would, even when
// that is only punctuation or nothing ([2, 3]).
func Reference(text, language string) (Result, error) {
	var r Result
	var err error
	if r.Normalized, err = Normalize(text, language); err != nil {
		return r, err
	}
	if r.Phonemes, err = Phonemize(r.Normalized, language); err != nil {
		return r, err
	}
	r.IDs = Tokenize(r.Phonemes)
	return r, nil
}

// Prepare turns text into the phoneme ids the model is conditioned on, and
// the phonemes they spell. It is Reference with guards for input the
// reference would crash on or make the model babble about: invalid UTF-8
// (ErrInvalidUTF8), empty or whitespace-only text (ErrEmpty), and text with
// nothing to pronounce, such as "?!" (ErrNothingToSay). Errors wrap these
// sentinels and the package's other ones, so test them with errors.Is.
func Prepare(text, language string) (ids []int32, phonemes string, err error) {
	if !utf8.ValidString(text) {
		return nil, "", ErrInvalidUTF8
	}
	if err := CheckLanguage(language); err != nil {
		return nil, "", err
	}
	if text == "" {
		return nil, "", ErrEmpty
	}
	if strings.TrimFunc(text, isPySpace) == "" {
		return nil, "", fmt.Errorf("%w: nothing but whitespace", ErrEmpty)
	}
	r, err := Reference(text, language)
	if err != nil {
		return nil, "", err
	}
	if !hasSound(r.Phonemes) {
		return nil, "", fmt.Errorf("%w: %q gives phonemes %q", ErrNothingToSay, abbreviate(text), r.Phonemes)
	}
	return r.IDs, r.Phonemes, nil
}

// hasSound reports whether phonemes hold a symbol that is neither a mark nor
// whitespace nor unknown to the model.
func hasSound(phonemes string) bool {
	for _, r := range phonemes {
		if SymbolID(r) != UnkID && !isMark(r) {
			return true
		}
	}
	return false
}

// abbreviate keeps error messages short for long inputs.
func abbreviate(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "…"
}
