package text

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrNumberTooLarge reports a digit run of 10^36 or more, which inflect (and
// so the reference) cannot read: Zonos raises NumOutOfRangeError there.
var ErrNumberTooLarge = errors.New("text: number too large to read (10^36 or more)")

// ErrMoneyFormat reports a dollar amount with a comma that is not between two
// digits ("$,5"): the reference crashes there with a ValueError.
var ErrMoneyFormat = errors.New("text: malformed dollar amount (stray comma)")

// The six substitutions of Zonos' normalize_numbers, in the order it applies
// them (zonos/conditioning.py; FACTS §1). Go's regexp prefers the same
// leftmost, greedy matches as Python's re for these patterns.
var (
	commaNumberRE   = regexp.MustCompile(`[0-9][0-9,]+[0-9]`)
	poundsRE        = regexp.MustCompile(`£([0-9,]*[0-9]+)`)
	dollarsRE       = regexp.MustCompile(`\$([0-9.,]*[0-9]+)`)
	decimalNumberRE = regexp.MustCompile(`[0-9]+\.[0-9]+`)
	ordinalRE       = regexp.MustCompile(`[0-9]+(?:st|nd|rd|th)`)
	numberRE        = regexp.MustCompile(`[0-9]+`)
)

// NormalizeNumbers is Zonos' normalize_numbers: it spells out the ASCII
// numbers of English text (commas, £, $, decimals, ordinals, then cardinals
// with years read as "nineteen oh five") and leaves everything else alone.
// It fails only where the reference crashes (ErrNumberTooLarge,
// ErrMoneyFormat).
func NormalizeNumbers(s string) (string, error) {
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	s = commaNumberRE.ReplaceAllStringFunc(s, func(m string) string {
		return strings.ReplaceAll(m, ",", "")
	})
	s = poundsRE.ReplaceAllString(s, "$1 pounds")
	s = dollarsRE.ReplaceAllStringFunc(s, func(m string) string {
		out, e := expandDollars(m[1:])
		if e != nil {
			fail(e)
		}
		return out
	})
	s = decimalNumberRE.ReplaceAllStringFunc(s, func(m string) string {
		return strings.Replace(m, ".", " point ", 1)
	})
	s = ordinalRE.ReplaceAllStringFunc(s, func(m string) string {
		digits := m[:len(m)-2]
		if len(trimZeros(digits)) > maxDigits {
			fail(ErrNumberTooLarge)
			return m
		}
		return ordinalWords(digits)
	})
	s = numberRE.ReplaceAllStringFunc(s, func(m string) string {
		out, e := expandNumber(m)
		if e != nil {
			fail(e)
		}
		return out
	})
	if err != nil {
		return "", err
	}
	return s, nil
}

// expandDollars rewrites the amount after a "$" ("5.50" → "5 dollars, 50
// cents"). Cents are the integer value of the digits after the point, not
// scaled: "5.5" is five cents, as in the reference.
func expandDollars(g string) (string, error) {
	parts := strings.Split(g, ".")
	if len(parts) > 2 {
		return g + " dollars", nil
	}
	intValue := func(p string) (string, error) { // Python int(), digits only
		if strings.Contains(p, ",") {
			return "", fmt.Errorf("%w: %q", ErrMoneyFormat, "$"+g)
		}
		if v := trimZeros(p); v != "" {
			return v, nil
		}
		return "0", nil
	}
	dollars, cents := "0", "0"
	var err error
	if parts[0] != "" {
		if dollars, err = intValue(parts[0]); err != nil {
			return "", err
		}
	}
	if len(parts) > 1 && parts[1] != "" {
		if cents, err = intValue(parts[1]); err != nil {
			return "", err
		}
	}
	unit := func(v, one, many string) string {
		if v == "1" {
			return v + " " + one
		}
		return v + " " + many
	}
	switch {
	case dollars != "0" && cents != "0":
		return unit(dollars, "dollar", "dollars") + ", " + unit(cents, "cent", "cents"), nil
	case dollars != "0":
		return unit(dollars, "dollar", "dollars"), nil
	case cents != "0":
		return unit(cents, "cent", "cents"), nil
	default:
		return "zero dollars", nil
	}
}

// expandNumber reads a digit run as a cardinal, years 1001–2999 year-style.
func expandNumber(digits string) (string, error) {
	d := trimZeros(digits)
	if len(d) > maxDigits {
		return "", ErrNumberTooLarge
	}
	if len(d) == 4 {
		if n, _ := strconv.Atoi(d); n > 1000 && n < 3000 {
			return yearWords(n), nil
		}
	}
	return cardinalWords(d, ""), nil
}
