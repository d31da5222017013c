package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"zonostream/audio"
	"zonostream/engine/dac"
	"zonostream/engine/sample"
	"zonostream/engine/speaker"
	"zonostream/engine/text"
	"zonostream/engine/zonos"
	"zonostream/internal/check"
)

func init() {
	register("conformance", "check the engine against golden reference packs", runConformance)
}

func runConformance(args []string) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	dir := fs.String("golden", defaultGolden(), "directory of golden packs (zonos-*, sampling, dac-*, speaker-*, resample, text)")
	backend := fs.String("backend", "cpu", "compute backend: cpu or cuda")
	only := fs.String("only", "", "comma-separated pack name prefixes to run (default: all recognised)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	names, err := check.Packs(*dir, "")
	if err != nil {
		fmt.Fprintf(os.Stderr, "zonos conformance: %v (pass --golden DIR)\n", err)
		return 2
	}
	b, err := openBackend(*backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonos conformance:", err)
		return 2
	}
	defer b.Close()
	want := func(name string) bool {
		if *only == "" {
			return true
		}
		for _, p := range strings.Split(*only, ",") {
			if p != "" && strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	var results []check.Result
	dacDone, speakerDone := false, false
	for _, name := range names {
		if !want(name) {
			continue
		}
		pack := filepath.Join(*dir, name)
		switch {
		case strings.HasPrefix(name, "zonos-"):
			results = append(results, zonos.Conformance(pack, b)...)
		case name == "sampling":
			results = append(results, sample.Conformance(pack)...)
			results = append(results, sample.DeviceConformance(pack, b)...)
			results = append(results, zonos.LoopConformance(pack)...)
		case strings.HasPrefix(name, "dac-"):
			if !dacDone {
				results = append(results, dac.Conformance(*dir, b)...)
				dacDone = true
			}
		case name == "text":
			results = append(results, text.Conformance(*dir)...)
		case name == "resample":
			results = append(results, audio.ResampleConformance(*dir)...)
		case strings.HasPrefix(name, "speaker-"):
			if !speakerDone {
				results = append(results, speaker.Conformance(*dir, b)...)
				speakerDone = true
			}
		}
	}
	if len(results) == 0 {
		fmt.Fprintf(os.Stderr, "zonos conformance: no recognised packs in %s\n", *dir)
		return 2
	}
	if !check.Print(os.Stdout, results) {
		return 1
	}
	return 0
}

// defaultGolden is $ZONOS_GOLDEN_DIR, else ../shared/golden.
func defaultGolden() string {
	if d := os.Getenv("ZONOS_GOLDEN_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "shared", "golden")
}
