package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"zonostream/engine/text"
)

func init() {
	register("phonemes", "show the normalised text, espeak-ng phonemes and ids Zonos hears", runPhonemes)
}

func runPhonemes(args []string) int {
	fs := flag.NewFlagSet("phonemes", flag.ContinueOnError)
	lang := fs.String("lang", "en-us", "espeak language code")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: zonos phonemes [--lang CODE] \"text\"")
		return 2
	}
	in := strings.Join(fs.Args(), " ")
	if _, _, err := text.Prepare(in, *lang); err != nil {
		fmt.Fprintln(os.Stderr, "zonos phonemes:", err)
		return 1
	}
	r, err := text.Reference(in, *lang)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos phonemes:", err)
		return 1
	}
	if v, data, err := text.EspeakVersion(); err == nil {
		fmt.Printf("espeak-ng  %s (%s)\n", v, data)
	}
	fmt.Printf("normalized %s\n", r.Normalized)
	fmt.Printf("phonemes   %s\n", r.Phonemes)
	fmt.Printf("ids        %v\n", r.IDs)
	return 0
}
