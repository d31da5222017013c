package text

import (
	"errors"
	"strings"
	"testing"
)

// TestNormalizeNumbers holds the examples of FACTS §1
// (../shared/golden/text/README.md), which the inflect-based reference gives.
func TestNormalizeNumbers(t *testing.T) {
	cases := []struct{ in, want string }{
		// commas
		{"1,2", "twelve"},
		{"3,14", "three hundred fourteen"},
		{"1,000,", "one thousand,"},
		// pounds
		{"£9.99", "nine pounds.ninety-nine"},
		{"£1", "one pounds"},
		// dollars
		{"$5.5", "five dollars, five cents"},
		{"$5.50", "five dollars, fifty cents"},
		{"$5.050", "five dollars, fifty cents"},
		{"$.50", "fifty cents"},
		{"$0", "zero dollars"},
		{"$1.01", "one dollar, one cent"},
		{"$1.2.3", "one point two.three dollars"},
		{"$1", "one dollar"},
		{"$007", "seven dollars"},
		// decimals
		{"3.14", "three point fourteen"},
		{"0.05", "zero point five"},
		{"2.0.1", "two point zero.one"},
		// ordinals
		{"101st", "one hundred and first"},
		{"2,002nd", "two thousand and second"},
		{"00th", "zeroth"},
		{"1999th", "one thousand, nine hundred and ninety-ninth"},
		{"4st", "fourth"},
		{"5this", "fifthis"},
		{"1ST", "oneST"},
		{"11th 12th 20th 21st 100th 1000th", "eleventh twelfth twentieth twenty-first one hundredth one thousandth"},
		{"1001st", "one thousand and first"},
		// cardinals and years
		{"007", "seven"},
		{"2000", "two thousand"},
		{"2005", "two thousand five"},
		{"1900 1100 2100 2500", "nineteen hundred eleven hundred twenty-one hundred twenty-five hundred"},
		{"1905 1066 2010 1001 2999", "nineteen oh five ten sixty-six twenty ten ten oh one twenty-nine ninety-nine"},
		{"2,500", "twenty-five hundred"},
		{"1,850.25", "eighteen fifty point twenty-five"},
		{"1000 3000", "one thousand three thousand"},
		{"3005", "three thousand five"},
		{"3021", "three thousand twenty-one"},
		{"3121", "three thousand, one hundred twenty-one"},
		{"5000002", "five million two"},
		{"12345", "twelve thousand, three hundred forty-five"},
		{"1234567", "one million, two hundred thirty-four thousand, five hundred sixty-seven"},
		{"3000000000", "three billion"},
		{"101", "one hundred one"},
		{"0", "zero"},
		{"mp3", "mpthree"},
		{"COVID-19", "COVID-nineteen"},
		// left alone
		{"١٢٣ ４２", "١٢٣ ４２"},
		{"no numbers", "no numbers"},
	}
	for _, c := range cases {
		got, err := NormalizeNumbers(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeNumbers(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCardinalWordsLargest(t *testing.T) {
	got := cardinalWords(strings.Repeat("9", 36), "")
	if !strings.HasPrefix(got, "nine hundred ninety-nine decillion, ") || !strings.HasSuffix(got, "thousand, nine hundred ninety-nine") {
		t.Errorf("10^36-1 = %q", got)
	}
}

// TestNormalizeNumbersFailures are the inputs the reference crashes on.
func TestNormalizeNumbersFailures(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"1" + strings.Repeat("0", 36), ErrNumberTooLarge},
		{"$1" + strings.Repeat("0", 36), ErrNumberTooLarge},
		{"1" + strings.Repeat("0", 36) + "th", ErrNumberTooLarge},
		{"$,5", ErrMoneyFormat},
		{"$5.,5", ErrMoneyFormat},
	}
	for _, c := range cases {
		if got, err := NormalizeNumbers(c.in); !errors.Is(err, c.want) {
			t.Errorf("NormalizeNumbers(%q) = %q, %v; want %v", c.in, got, err, c.want)
		}
	}
	// Leading zeros do not count: this is seven.
	if got, err := NormalizeNumbers(strings.Repeat("0", 100) + "7"); err != nil || got != "seven" {
		t.Errorf("zero-padded 7 = %q, %v", got, err)
	}
}
