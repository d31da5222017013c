package text

import (
	"errors"
	"regexp"
	"strings"
)

// ErrEmpty reports text with nothing in it. For the empty string the
// reference has no answer either (phonemizer returns no utterance and Zonos
// raises IndexError).
var ErrEmpty = errors.New("text: empty text")

// Phonemize is Zonos' phonemize() for one already normalised text: what
// phonemizer's espeak backend returns with Zonos' options (preserved
// punctuation with Marks, stress marks, keep-flags language switches,
// strip=True). The mark runs are kept verbatim and espeak reads each word on
// its own (FACTS §§2–5). language must pass CheckLanguage.
func Phonemize(normalized, language string) (string, error) {
	if err := CheckLanguage(language); err != nil {
		return "", err
	}
	chunks, marks := splitMarks(normalized)
	switch {
	case len(chunks) == 0 && len(marks) == 0:
		return "", ErrEmpty
	case len(chunks) == 0:
		return normalized, nil // one mark run, the whole text
	}
	raw, err := espeakPhonemes(language, chunks)
	if err != nil {
		return "", err
	}
	for i, r := range raw {
		raw[i] = postprocess(r)
	}
	return restoreMarks(raw, marks), nil
}

var underscoreRunRE = regexp.MustCompile(`_+`)

// postprocess is phonemizer's _postprocess_line for one chunk's espeak
// output, with Zonos' options (FACTS §4).
func postprocess(line string) string {
	line = pyStrip(line)
	line = strings.ReplaceAll(line, "\n", " ")
	line = strings.ReplaceAll(line, "  ", " ") // one pass, as str.replace
	line = underscoreRunRE.ReplaceAllString(line, "_")
	line = strings.ReplaceAll(line, "_ ", " ")
	// keep-flags: language switch flags such as "(en)" stay.
	if line == "" {
		return ""
	}
	words := strings.Split(line, " ")
	for i, w := range words {
		words[i] = strings.ReplaceAll(pyStrip(w), "_", "")
	}
	return strings.Join(words, " ")
}
