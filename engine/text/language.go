package text

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
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

// languageNames are the codes' names in English (espeak-ng 1.51's voice
// list, shortened): "Name" or "Name (variety)".
var languageNames = map[string]string{
	"af": "Afrikaans", "am": "Amharic", "an": "Aragonese", "ar": "Arabic", "as": "Assamese",
	"az": "Azerbaijani", "ba": "Bashkir", "bg": "Bulgarian", "bn": "Bengali", "bpy": "Bishnupriya Manipuri",
	"bs": "Bosnian", "ca": "Catalan", "cmn": "Chinese (Mandarin)", "cs": "Czech", "cy": "Welsh",
	"da": "Danish", "de": "German", "el": "Greek", "en-029": "English (Caribbean)", "en-gb": "English (UK)",
	"en-gb-scotland": "English (Scotland)", "en-gb-x-gbclan": "English (Lancaster)", "en-gb-x-gbcwmd": "English (West Midlands)",
	"en-gb-x-rp": "English (Received Pronunciation)", "en-us": "English (US)", "eo": "Esperanto", "es": "Spanish (Spain)",
	"es-419": "Spanish (Latin America)", "et": "Estonian", "eu": "Basque", "fa": "Persian", "fa-latn": "Persian (Pinglish)",
	"fi": "Finnish", "fr-be": "French (Belgium)", "fr-ch": "French (Switzerland)", "fr-fr": "French (France)",
	"ga": "Irish", "gd": "Scottish Gaelic", "gn": "Guarani", "grc": "Ancient Greek", "gu": "Gujarati",
	"hak": "Hakka Chinese", "hi": "Hindi", "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian",
	"hy": "Armenian (East)", "hyw": "Armenian (West)", "ia": "Interlingua", "id": "Indonesian", "is": "Icelandic",
	"it": "Italian", "ja": "Japanese", "jbo": "Lojban", "ka": "Georgian", "kk": "Kazakh", "kl": "Greenlandic",
	"kn": "Kannada", "ko": "Korean", "kok": "Konkani", "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin",
	"lfn": "Lingua Franca Nova", "lt": "Lithuanian", "lv": "Latvian", "mi": "Māori", "mk": "Macedonian",
	"ml": "Malayalam", "mr": "Marathi", "ms": "Malay", "mt": "Maltese", "my": "Burmese", "nb": "Norwegian Bokmål",
	"nci": "Nahuatl (Classical)", "ne": "Nepali", "nl": "Dutch", "om": "Oromo", "or": "Odia", "pa": "Punjabi",
	"pap": "Papiamento", "pl": "Polish", "pt": "Portuguese (Portugal)", "pt-br": "Portuguese (Brazil)",
	"py": "Pyash", "quc": "K'iche'", "ro": "Romanian", "ru": "Russian", "ru-lv": "Russian (Latvia)",
	"sd": "Sindhi", "shn": "Shan", "si": "Sinhala", "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian",
	"sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tn": "Setswana",
	"tr": "Turkish", "tt": "Tatar", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese (North)",
	"vi-vn-x-central": "Vietnamese (Central)", "vi-vn-x-south": "Vietnamese (South)", "yue": "Chinese (Cantonese)",
}

// LanguageName is the English name of a supported code ("en-us" → "English
// (US)"), or the code itself when it has none.
func LanguageName(code string) string {
	if n, ok := languageNames[code]; ok {
		return n
	}
	return code
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
// closest supported codes, or some common ones when none is close.
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
	return fmt.Errorf("%w: %q matches no supported code or language name; codes are espeak-ng's, e.g. en-us, en-gb, fr-fr, de, es, cmn, hi",
		ErrUnsupportedLanguage, code)
}

// languageAliases maps codes espeak does not take (ISO 639-1 without a
// region, ISO 639-2/3, other spellings) and other names of languages to
// Zonos' codes, best first. ISO 639-2 codes that begin the English name
// ("eng", "spa", "ger") need no entry: a name's prefix matches.
var languageAliases = map[string][]string{
	"en": {"en-us", "en-gb"}, "fr": {"fr-fr", "fr-be", "fr-ch"}, "pt-pt": {"pt"},
	"zh": {"cmn", "yue", "hak"}, "zh-cn": {"cmn"}, "zh-tw": {"cmn"}, "zh-hk": {"yue"}, "zho": {"cmn", "yue"},
	"no": {"nb"}, "nn": {"nb"}, "nob": {"nb"}, "in": {"id"}, "en-uk": {"en-gb"},
	"deu": {"de"}, "fra": {"fr-fr"}, "nld": {"nl"}, "ell": {"el"}, "fas": {"fa"}, "per": {"fa"},
	"ces": {"cs"}, "cze": {"cs"}, "cym": {"cy"}, "wel": {"cy"}, "eus": {"eu"}, "baq": {"eu"},
	"hye": {"hy"}, "arm": {"hy"}, "kat": {"ka"}, "geo": {"ka"}, "msa": {"ms"}, "may": {"ms"},
	"mya": {"my"}, "bur": {"my"}, "sqi": {"sq"}, "alb": {"sq"}, "ron": {"ro"}, "rum": {"ro"},
	"slk": {"sk"}, "slo": {"sk"}, "isl": {"is"}, "ice": {"is"}, "mkd": {"mk"}, "mac": {"mk"},
	"mri": {"mi"}, "mao": {"mi"}, "gle": {"ga"}, "gla": {"gd"},
	"mandarin": {"cmn"}, "cantonese": {"yue"}, "farsi": {"fa"}, "castilian": {"es"}, "gaelic": {"gd", "ga"},
	"norwegian": {"nb"}, "american": {"en-us"}, "british": {"en-gb"}, "brazilian": {"pt-br"},
	"deutsch": {"de"}, "français": {"fr-fr"}, "francais": {"fr-fr"}, "español": {"es"}, "espanol": {"es"},
	"italiano": {"it"}, "português": {"pt", "pt-br"}, "portugues": {"pt", "pt-br"}, "nederlands": {"nl"},
	"svenska": {"sv"}, "norsk": {"nb"}, "dansk": {"da"}, "suomi": {"fi"}, "polski": {"pl"}, "türkçe": {"tr"},
}

// preferred orders a language's varieties when a query matches several
// equally well (English means en-us first).
var preferred = map[string]int{"en-us": 0, "en-gb": 1, "fr-fr": 0, "es": 0, "pt": 0, "pt-br": 1, "vi": 0, "cmn": 0}

// ClosestLanguages suggests up to n supported codes for a code or name that
// is not one: "EN_US" is en-us, "fr_FR" fr-fr, "eng" and "English" en-us and
// en-gb, "de-AT" de, "spansh" es. In order, it matches the code spelled
// another way, aliases, a code of the same language (primary subtag), a
// language name or the start of one, then near misses by edit distance on
// codes and names; ties go to a language's main variety, then Languages
// order. A query close to nothing gets no suggestion: two letters are not
// "close" to every other two-letter code.
func ClosestLanguages(code string, n int) []string {
	c := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(code, "_", "-")))
	c = strings.Join(strings.Fields(c), " ")
	type cand struct {
		code  string
		score int
	}
	best := map[string]int{}
	add := func(l string, score int) {
		if l == "ja" { // never a working suggestion
			return
		}
		if s, ok := best[l]; !ok || score < s {
			best[l] = score
		}
	}
	if c == "" {
		return nil
	}
	if _, ok := languageIndex[c]; ok {
		add(c, 0)
	}
	for _, l := range languageAliases[c] {
		add(l, 1)
	}
	primary, region, _ := strings.Cut(c, "-")
	for _, l := range languageAliases[primary] {
		add(l, 2)
	}
	for _, l := range Languages {
		lp, _, _ := strings.Cut(l, "-")
		if lp == primary {
			add(l, 2)
		}
		if region != "" && strings.HasPrefix(c, l+"-") { // en-gb-foo → en-gb
			add(l, 1)
		}
	}
	word := strings.Map(func(r rune) rune { // "English (US)" as a query is "english us"
		if unicode.IsLetter(r) || r == ' ' || r == '-' {
			return r
		}
		return -1
	}, c)
	for _, l := range Languages {
		name, variety := nameParts(l)
		switch {
		case word == name:
			add(l, 1)
		case len(word) >= 3 && strings.HasPrefix(name, word):
			add(l, 2)
		case len(word) >= 3 && strings.HasPrefix(word, name) && strings.Contains(word[len(name):], variety) && variety != "":
			add(l, 1) // "english us", "french-belgium"
		}
	}
	// Near misses by edit distance: one edit for queries of three to five
	// letters, two from six; none for two letters, where one edit reaches a
	// dozen unrelated codes. Names (five letters or more) up to a quarter of
	// their length.
	for _, l := range Languages {
		if limit := min(len(c)/3, 2); limit > 0 && editDistance(c, l) <= limit {
			add(l, 3)
		}
		if name, _ := nameParts(l); len(word) >= 5 && editDistance(word, name) <= max(1, len(name)/4) {
			add(l, 3)
		}
	}
	out := make([]cand, 0, len(best))
	for l, s := range best {
		out = append(out, cand{l, s})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.score != b.score {
			return a.score < b.score
		}
		pa, oka := preferred[a.code]
		pb, okb := preferred[b.code]
		if oka != okb {
			return oka
		}
		if oka && pa != pb {
			return pa < pb
		}
		return languageIndex[a.code] < languageIndex[b.code]
	})
	var s []string
	for _, x := range out {
		if len(s) == n {
			break
		}
		s = append(s, x.code)
	}
	return s
}

// nameParts splits a code's name into its lower-case language name and
// variety: "English (US)" → "english", "us".
func nameParts(code string) (name, variety string) {
	n, v, _ := strings.Cut(strings.ToLower(LanguageName(code)), " (")
	return n, strings.TrimSuffix(v, ")")
}

// editDistance is the Levenshtein distance between two short strings, in
// bytes (codes and names are mostly ASCII); long inputs are cut to keep it
// cheap.
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
