package text_test

import (
	"fmt"
	"strings"

	"zonostream/engine/text"
)

func ExamplePrepare() {
	ids, phonemes, err := text.Prepare("Hello world.", "en-us")
	if err != nil {
		panic(err)
	}
	fmt.Println(phonemes)
	fmt.Println(ids)
	// Output:
	// həlˈoʊ wˈɜːld.
	// [2 61 94 65 167 68 146 21 76 167 98 169 65 57 7 3]
}

func ExampleNormalizeNumbers() {
	s, _ := text.NormalizeNumbers("In 1905 it cost $5.50; by the 21st century, 2,500 pounds.")
	fmt.Println(s)
	// Output:
	// In nineteen oh five it cost five dollars, fifty cents; by the twenty-first century, twenty-five hundred pounds.
}

func ExampleCheckLanguage() {
	fmt.Println(text.CheckLanguage("en"))
	// Output:
	// text: unsupported language: "en" (closest supported: en-us, en-gb, en-029, en-gb-scotland, en-gb-x-gbclan)
}

func ExampleSplit() {
	long := "First sentence here. A second one, with a clause; and more. Short."
	for _, piece := range text.Split(long, 30, text.PhonemeCost("en-us")) {
		fmt.Printf("%q\n", piece)
	}
	fmt.Println(strings.Join(text.Split(long, 30, text.PhonemeCost("en-us")), "") == long)
	// Output:
	// "First sentence here. "
	// "A second one, "
	// "with a clause; and more. "
	// "Short."
	// true
}
