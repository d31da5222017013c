package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"zonostream/engine/compute"
	"zonostream/internal/check"
	"zonostream/internal/conformance"
)

func init() {
	register("conformance", "check the engine against golden reference packs", runConformance)
}

func runConformance(args []string) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	dir := fs.String("golden", defaultGolden(), "directory of golden packs (zonos-*, sampling, dac-*, speaker-*, resample, text)")
	backend := addBackendFlags(fs, "cpu")
	only := fs.String("only", "", "comma-separated pack name prefixes to run (default: all recognised)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	packs, err := conformance.Packs(*dir, "")
	if err != nil {
		fmt.Fprintf(os.Stderr, "zonos conformance: %v (pass --golden DIR)\n", err)
		return 2
	}
	if *only != "" {
		packs = selectPacks(packs, strings.Split(*only, ","))
	}
	b, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos conformance:", err)
		return 2
	}
	defer b.Close()
	fmt.Fprintf(os.Stderr, "zonos conformance: backend %s on %s; plan: %s\n", b.Name(), b.Device(), compute.PlanOf(b).String())
	results := conformance.Run(*dir, packs, b)
	if len(results) == 0 {
		fmt.Fprintf(os.Stderr, "zonos conformance: no recognised packs in %s\n", *dir)
		return 2
	}
	if !check.Print(os.Stdout, results) {
		return 1
	}
	return 0
}

// selectPacks keeps the packs whose names start with one of prefixes.
func selectPacks(packs, prefixes []string) []string {
	var kept []string
	for _, name := range packs {
		for _, p := range prefixes {
			if p != "" && strings.HasPrefix(name, p) {
				kept = append(kept, name)
				break
			}
		}
	}
	return kept
}

// defaultGolden is $ZONOS_GOLDEN_DIR, else ../shared/golden.
func defaultGolden() string {
	if d := os.Getenv("ZONOS_GOLDEN_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "shared", "golden")
}
