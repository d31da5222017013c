package text

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Languages are Zonos' supported_language_codes, in its order: a code's index
// is the language id the model is conditioned on (zonos/conditioning.py,
// make_cond_dict). Each is an espeak-ng language name.
var Languages = []string{
	"af", "am", "an", "ar", "as", "az", "ba", "bg", "bn", "bpy", "bs", "ca", "cmn",
	"cs", "cy", "da", "de", "el", "en-029", "en-gb", "en-gb-scotland", "en-gb-x-gbclan",
	"en-gb-x-gbcwmd", "en-gb-x-rp", "en-us", "eo", "es", "es-419", "et", "eu", "fa",
	"fa-latn", "fi", "fr-be", "fr-ch", "fr-fr", "ga", "gd", "gn", "grc", "gu", "hak",
	"hi", "hr", "ht", "hu", "hy", "hyw", "ia", "id", "is", "it", "ja", "jbo", "ka",
	"kk", "kl", "kn", "ko", "kok", "ku", "ky", "la", "lfn", "lt", "lv", "mi", "mk",
	"ml", "mr", "ms", "mt", "my", "nb", "nci", "ne", "nl", "om", "or", "pa", "pap",
	"pl", "pt", "pt-br", "py", "quc", "ro", "ru", "ru-lv", "sd", "shn", "si", "sk",
	"sl", "sq", "sr", "sv", "sw", "ta", "te", "tn", "tr", "tt", "ur", "uz", "vi",
	"vi-vn-x-central", "vi-vn-x-south", "yue",
}

var languageIndex = func() map[string]int {
	m := make(map[string]int, len(Languages))
	for i, l := range Languages {
		m[l] = i
	}
	return m
}()

// ErrUnsupportedLanguage is wrapped by every language error.
var ErrUnsupportedLanguage = errors.New("text: unsupported language")

// ErrJapanese explains why "ja" is refused; see the package documentation.
var ErrJapanese = fmt.Errorf("%w: ja (Japanese needs the reference's Sudachi morphological reader, which this engine does not have)", ErrUnsupportedLanguage)

// LanguageID returns the model's language id for a code (its index in
// Languages), or an error naming the closest supported codes.
func LanguageID(code string) (int, error) {
	if err := CheckLanguage(code); err != nil {
		return 0, err
	}
	return languageIndex[code], nil
}

// CheckLanguage accepts exactly the codes in Languages, spelled as there
// (lower case), except "ja". Anything else gets an error that lists the
// closest supported codes.
func CheckLanguage(code string) error {
	if code == "ja" {
		return ErrJapanese
	}
	if _, ok := languageIndex[code]; ok {
		return nil
	}
	if s := ClosestLanguages(code, 5); len(s) > 0 {
		return fmt.Errorf("%w: %q (closest supported: %s)", ErrUnsupportedLanguage, code, strings.Join(s, ", "))
	}
	return fmt.Errorf("%w: %q (see text.Languages)", ErrUnsupportedLanguage, code)
}

// languageAliases maps common codes espeak does not take to Zonos' codes.
var languageAliases = map[string][]string{
	"zh": {"cmn", "yue", "hak"}, "zh-cn": {"cmn"}, "zh-tw": {"cmn"}, "zh-hk": {"yue"},
	"en": {"en-us", "en-gb"}, "fr": {"fr-fr"}, "pt-pt": {"pt"},
	"no": {"nb"}, "nn": {"nb"}, "in": {"id"},
}

// ClosestLanguages suggests up to n supported codes for a mistyped one:
// aliases first, then codes sharing its primary subtag, then by edit
// distance (at most 2), ties in Languages order.
func ClosestLanguages(code string, n int) []string {
	c := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(code, "_", "-")))
	type cand struct {
		code  string
		score int
	}
	seen := map[string]bool{}
	var out []cand
	add := func(l string, score int) {
		if !seen[l] && l != "ja" { // ja is never a working suggestion
			seen[l] = true
			out = append(out, cand{l, score})
		}
	}
	if _, ok := languageIndex[c]; ok {
		add(c, -2)
	}
	for _, l := range languageAliases[c] {
		add(l, -1)
	}
	primary, _, _ := strings.Cut(c, "-")
	for _, l := range Languages {
		lp, _, _ := strings.Cut(l, "-")
		if primary != "" && lp == primary {
			add(l, 0)
		}
	}
	for _, l := range Languages {
		if d := editDistance(c, l); d <= 2 {
			add(l, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score < out[j].score })
	var s []string
	for _, x := range out {
		if len(s) == n {
			break
		}
		s = append(s, x.code)
	}
	return s
}

// editDistance is the Levenshtein distance between two short strings, in
// bytes (language codes are ASCII); long inputs are cut to keep it cheap.
func editDistance(a, b string) int {
	if len(a) > 32 {
		a = a[:32]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
