package text

import (
	"errors"
	"strings"
	"testing"
)

func TestLanguages(t *testing.T) {
	if len(Languages) != 109 {
		t.Fatalf("%d languages, Zonos has 109", len(Languages))
	}
	if id, err := LanguageID("en-us"); err != nil || id != 24 { // conditioning.py: 24 is en-us
		t.Errorf("LanguageID(en-us) = %d, %v; want 24", id, err)
	}
	// Every supported code but ja has an espeak voice in the linked build.
	for _, l := range Languages {
		if l == "ja" {
			continue
		}
		if _, err := espeakVoice(l); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	if id, _ := espeakVoice("en-gb"); id != "gmw/en" {
		t.Errorf("en-gb voice = %q, want gmw/en (FACTS §3)", id)
	}
}

func TestCheckLanguage(t *testing.T) {
	cases := []struct {
		code    string
		suggest string // must appear in the error; "" when the code is fine
	}{
		{"en-us", ""},
		{"cmn", ""},
		{"EN-US", "en-us"},
		{"en", "en-us, en-gb"},
		{"fr", "fr-fr"},
		{"zh", "cmn"},
		{"de-de", "de"},
		{"en_us", "en-us"},
		{"xx-nonsense", "supported"},
		{"", "supported"},
	}
	for _, c := range cases {
		err := CheckLanguage(c.code)
		switch {
		case c.suggest == "" && err != nil:
			t.Errorf("CheckLanguage(%q) = %v", c.code, err)
		case c.suggest != "" && (err == nil || !errors.Is(err, ErrUnsupportedLanguage) || !strings.Contains(err.Error(), c.suggest)):
			t.Errorf("CheckLanguage(%q) = %v, want an error naming %q", c.code, err, c.suggest)
		}
	}
	if err := CheckLanguage("ja"); !errors.Is(err, ErrJapanese) || !errors.Is(err, ErrUnsupportedLanguage) {
		t.Errorf("CheckLanguage(ja) = %v", err)
	}
	if _, _, err := Prepare("こんにちは", "ja"); !errors.Is(err, ErrJapanese) {
		t.Errorf("Prepare(ja) = %v", err)
	}
}

// TestClosestLanguages: suggestions are close to what was typed — the code
// spelled another way, the language's name or ISO 639-2 code, a typo —
// and a query close to nothing gets none, not the first codes in
// alphabetical order ("xx" once got "af, am, an, ar, as").
func TestClosestLanguages(t *testing.T) {
	cases := []struct {
		query string
		first []string // the suggestions must begin with these, in order
	}{
		{"en-us", []string{"en-us"}},
		{"EN-US", []string{"en-us"}},
		{"en_US", []string{"en-us"}},
		{"fr_FR", []string{"fr-fr"}},
		{"eng", []string{"en-us", "en-gb"}},
		{"english", []string{"en-us", "en-gb"}},
		{"English (US)", []string{"en-us"}},
		{"en-uk", []string{"en-gb"}},
		{"en-gb-foo", []string{"en-gb"}},
		{"fr", []string{"fr-fr"}},
		{"french", []string{"fr-fr"}},
		{"fra", []string{"fr-fr"}},
		{"deu", []string{"de"}},
		{"german", []string{"de"}},
		{"Deutsch", []string{"de"}},
		{"de-AT", []string{"de"}},
		{"spanish", []string{"es", "es-419"}},
		{"spansh", []string{"es", "es-419"}},
		{"portugese", []string{"pt", "pt-br"}},
		{"mandarin", []string{"cmn"}},
		{"zh", []string{"cmn"}},
		{"cmm", []string{"cmn"}},
		{"hindi", []string{"hi"}},
	}
	for _, c := range cases {
		got := ClosestLanguages(c.query, 5)
		if len(got) < len(c.first) || strings.Join(got[:len(c.first)], ",") != strings.Join(c.first, ",") {
			t.Errorf("ClosestLanguages(%q) = %v, want it to begin %v", c.query, got, c.first)
		}
	}
	for _, q := range []string{"xx", "zz", "xyzzy", "qqq", "", "   "} {
		if got := ClosestLanguages(q, 5); len(got) != 0 {
			t.Errorf("ClosestLanguages(%q) = %v, want none: nothing is close", q, got)
		}
	}
	for _, q := range []string{"jpn", "japanese"} {
		for _, s := range ClosestLanguages(q, 5) {
			if s == "ja" {
				t.Errorf("ClosestLanguages(%q) suggests ja, which is refused", q)
			}
		}
	}
	err := CheckLanguage("xx")
	if err == nil || strings.Contains(err.Error(), "af, am") || strings.Contains(err.Error(), "text.Languages") || !strings.Contains(err.Error(), "en-us") {
		t.Errorf("CheckLanguage(xx) = %v; want no alphabetical list, no Go names, and examples of real codes", err)
	}
}

func TestEspeakVersion(t *testing.T) {
	v, dir, err := EspeakVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("espeak-ng %s, data %s", v, dir)
	if !strings.HasPrefix(v, "1.51") {
		t.Errorf("espeak-ng %s linked; the golden phonemes are exact for 1.51 (Debian 12) only", v)
	}
}
