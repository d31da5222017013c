package text

// Special token ids (zonos/conditioning.py).
const (
	PadID = 0
	UnkID = 1
	BosID = 2
	EosID = 3
)

// Symbols are the phoneme symbols in id order from 4: Zonos' _punctuation,
// the ASCII letters and _letters_ipa. The apostrophe appears twice (ids 185
// and 187); like Python's dict, the later one wins, so "'" maps to 187.
const Symbols = Marks +
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" +
	"ɑɐɒæɓʙβɔɕçɗɖðʤəɘɚɛɜɝɞɟʄɡɠɢʛɦɧħɥʜɨɪʝɭɬɫɮʟɱɯɰŋɳɲɴøɵɸθœɶʘɹɺɾɻʀʁɽʂʃʈʧʉʊʋⱱʌɣɤʍχʎʏʑʐʒʔʡʕʢǀǁǂǃˈˌːˑʼʴʰʱʲʷˠˤ˞↓↑→↗↘'̩'ᵻ"

// VocabSize is the number of rows of the phoneme embedding: 4 special ids
// plus 185 symbols.
const VocabSize = 189

var symbolIDs = func() map[rune]int32 {
	m := map[rune]int32{}
	id := int32(4)
	for _, r := range Symbols {
		m[r] = id // a repeated symbol keeps its last id
		id++
	}
	return m
}()

// SymbolID is the id of one code point, UnkID when it is not a symbol.
func SymbolID(r rune) int32 {
	if id, ok := symbolIDs[r]; ok {
		return id
	}
	return UnkID
}

// Tokenize is Zonos' tokenize_phonemes for one text: BosID, one id per code
// point of phonemes, EosID, no padding.
func Tokenize(phonemes string) []int32 {
	ids := make([]int32, 0, len(phonemes)+2)
	ids = append(ids, BosID)
	for _, r := range phonemes {
		ids = append(ids, SymbolID(r))
	}
	return append(ids, EosID)
}
