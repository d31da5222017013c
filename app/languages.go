package app

import (
	"sort"

	"zonostream/engine/text"
)

// languageNames gives Zonos' espeak codes readable names (espeak-ng's
// voice list, shortened). Codes missing here show as the code itself.
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
		n, ok := languageNames[c]
		if !ok {
			n = c
		}
		out = append(out, Language{c, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
