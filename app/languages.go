package app

import (
	"sort"

	"zonostream/engine/text"
)

// Language is one entry of the language picker.
type Language struct{ Code, Name string }

// Label is "English (US) — en-us".
func (l Language) Label() string { return l.Name + " — " + l.Code }

// PickerLanguages lists the languages the engine speaks (Japanese is
// refused by engine/text), sorted by name.
func PickerLanguages() []Language {
	var out []Language
	for _, c := range text.Languages {
		if text.CheckLanguage(c) != nil {
			continue
		}
		out = append(out, Language{c, text.LanguageName(c)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
