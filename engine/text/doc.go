// Package text is Zonos' text front end: it turns text in one of Zonos'
// languages into the phoneme ids the model is conditioned on, exactly as
// the reference (zonos/conditioning.py with phonemizer 3.3 and inflect 7.5)
// does:
//
//	text → NormalizeNumbers → Phonemize (libespeak-ng) → Tokenize → ids
//
// The rules are specified, and checked by golden cases, in
// ../shared/golden/text (README.md, cases.jsonl); Conformance runs those
// cases. Phonemes are exact for the espeak-ng build the goldens were made
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
// as there, except Japanese: the reference reads Japanese through the Sudachi
// morphological analyser (sudachipy, "full" dictionary, split mode A, reading
// forms) after NFKC and kanji numerals. No maintained pure-Go port of Sudachi
// exists; a different analyser (such as kagome with IPA or UniDic) would give
// different readings that no golden case can check. So "ja" is refused with
// ErrJapanese rather than phonemized differently from the reference.
package text
