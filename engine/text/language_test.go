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
