// Package text is Zonos' text front end: it turns text in one of Zonos'
// languages into the phoneme ids the model is conditioned on, exactly as
// the reference (zonos/conditioning.py with phonemizer 3.3 and inflect 7.5)
// does:
//
//	text → NormalizeNumbers → Phonemize (libespeak-ng) → Tokenize → ids
//
// The rules are specified, and checked by golden cases, in
// ../shared/golden/text (README.md, cases.jsonl); internal/conformance runs
// those cases (`zonos conformance`, and this package's tests). Phonemes are exact for the espeak-ng build the goldens were made
// with, Debian 12's 1.51+dfsg-10+deb12u2; EspeakVersion reports the linked
// one.
//
// Prepare is the entry point for synthesis; Reference, Normalize, Phonemize
// and Tokenize are its stages. Split cuts long text into pieces under a
// phoneme budget for streaming.
//
// libespeak-ng is not thread-safe: the package drives one library instance
// under a mutex, so every function here is safe for concurrent use (calls
// into espeak run one at a time).
//
// Languages are exactly Zonos' supported_language_codes (Languages), spelled
// as there, lower case; anything else is refused with the closest supported
// codes (CheckLanguage). LanguageID gives the model's language id.
//
// Japanese ("ja") is refused with ErrJapanese. The reference reads Japanese
// through the Sudachi morphological analyser (sudachipy, "full" dictionary,
// split mode A, katakana reading forms) after NFKC and kanji numerals. We
// found no maintained pure-Go Sudachi; the maintained pure-Go analyser,
// kagome, uses other dictionaries (IPA, UniDic) whose readings differ from
// Sudachi's, and there are no Japanese golden cases to hold a port to. A
// front end that reads Japanese differently from the one the model was
// trained with would make it say other words, so ja is not phonemized.
//
// Empty or whitespace-only text, and text with nothing to pronounce, is
// refused by Prepare before the model runs (ErrEmpty, ErrNothingToSay);
// Reference keeps the reference's answers for them. NormalizeNumbers fails
// only where the reference crashes: numbers of 10^36 or more
// (ErrNumberTooLarge) and a "$" amount with a stray comma (ErrMoneyFormat).
package text
