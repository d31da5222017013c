package text

import "strings"

// English number words as Python's inflect 7.5 writes them with
// number_to_words(n, group=0): the rules are restated in
// ../shared/golden/text/README.md (FACTS §1, "Cardinal words" and "Ordinal
// words"). Numbers are handled as digit strings so that digit runs of any
// length are safe; inflect's limit (below 10^36) is enforced by the callers.

var unitWords = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

var teenWords = [...]string{"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}

var tensWords = [...]string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}

// scaleWords[i] names the i-th group of three digits counted from the right.
var scaleWords = [...]string{"", "thousand", "million", "billion", "trillion", "quadrillion",
	"quintillion", "sextillion", "septillion", "octillion", "nonillion", "decillion"}

// maxDigits is the most significant digits inflect accepts: n < 10^36.
const maxDigits = 3 * len(scaleWords)

// twoDigitWords writes 0 < 10*t+u < 100 ("seven", "twelve", "forty-two").
func twoDigitWords(t, u int) string {
	switch {
	case t == 0:
		return unitWords[u]
	case t == 1:
		return teenWords[u]
	case u == 0:
		return tensWords[t]
	default:
		return tensWords[t] + "-" + unitWords[u]
	}
}

// trimZeros drops leading zeros, as Python's int() does; "" means zero.
func trimZeros(digits string) string {
	return strings.TrimLeft(digits, "0")
}

// cardinalWords writes a run of ASCII digits (leading zeros allowed, at most
// maxDigits significant ones) in words. andword is "and" (inflect's default,
// used for ordinals) or "" (Zonos' cardinals).
func cardinalWords(digits, andword string) string {
	d := trimZeros(digits)
	if d == "" {
		return "zero"
	}
	type group struct {
		words  string
		simple bool // no hundreds: a single token such as "five" or "twenty-one"
	}
	var groups []group // highest first, non-zero groups only
	lowestNonZero := false
	ngroups := (len(d) + 2) / 3
	for g := ngroups - 1; g >= 0; g-- {
		end := len(d) - 3*g
		start := max(end-3, 0)
		v := 0
		for _, c := range d[start:end] {
			v = 10*v + int(c-'0')
		}
		if v == 0 {
			continue
		}
		h, tu := v/100, v%100
		var parts []string
		if h != 0 {
			parts = append(parts, unitWords[h], "hundred")
			if tu != 0 && andword != "" {
				parts = append(parts, andword)
			}
		}
		if tu != 0 {
			parts = append(parts, twoDigitWords(tu/10, tu%10))
		}
		if scaleWords[g] != "" {
			parts = append(parts, scaleWords[g])
		}
		groups = append(groups, group{strings.Join(parts, " "), h == 0})
		if g == 0 {
			lowestNonZero = true
		}
	}
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			last := i == len(groups)-1
			switch {
			case last && lowestNonZero && g.simple && andword != "":
				b.WriteString(" " + andword + " ")
			case last && lowestNonZero && g.simple:
				b.WriteString(" ")
			default:
				b.WriteString(", ")
			}
		}
		b.WriteString(g.words)
	}
	return b.String()
}

// ordinalSuffixes rewrites the end of a cardinal into an ordinal, checked in
// this order; anything else takes "th".
var ordinalSuffixes = [...]struct{ from, to string }{
	{"ty", "tieth"}, {"one", "first"}, {"two", "second"}, {"three", "third"},
	{"five", "fifth"}, {"eight", "eighth"}, {"nine", "ninth"}, {"twelve", "twelfth"},
}

// ordinalWords writes a digit run as an ordinal ("one hundred and first").
func ordinalWords(digits string) string {
	w := cardinalWords(digits, "and")
	for _, s := range ordinalSuffixes {
		if strings.HasSuffix(w, s.from) {
			return w[:len(w)-len(s.from)] + s.to
		}
	}
	return w + "th"
}

// yearWords writes 1000 < n < 3000 the way Zonos reads years:
// "nineteen oh five", "twenty ten", "two thousand five", "nineteen hundred".
func yearWords(n int) string {
	switch {
	case n == 2000:
		return "two thousand"
	case n > 2000 && n < 2010:
		return "two thousand " + unitWords[n%10]
	case n%100 == 0:
		hi := n / 100
		return twoDigitWords(hi/10, hi%10) + " hundred"
	}
	pair := func(v int) string {
		if v < 10 {
			return "oh " + unitWords[v]
		}
		return twoDigitWords(v/10, v%10)
	}
	return pair(n/100) + " " + pair(n%100)
}
