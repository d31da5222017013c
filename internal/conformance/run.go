// Package conformance holds the engine to the golden reference packs made
// by the original PyTorch code (golden/README.md): one file per stage, each
// comparing one kind of pack and reporting check.Results —
//
//	zonos.go    zonos-*   engine/zonos: prefix, layers, logits, tokens, codes
//	loop.go     sampling  engine/zonos' generate loop over stored logits
//	sample.go   sampling  engine/sample, and a backend's device sampler
//	dac.go      dac-*     engine/dac: codes → latent → audio, encode, streaming
//	speaker.go  speaker-* engine/speaker: resampling, features, embeddings
//	text.go     text      engine/text: normalised text, phonemes, ids
//
// with the bars each is held to (check.RelTol unless a file says why not).
// The resample pack checks audio's resampler (Resample). Run picks
// the checks for a directory of packs; `zonos conformance` prints them, and
// each model package's tests run its stage's checks on the CPU.
package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/internal/check"
)

// Packs lists the pack directories of goldenDir whose names start with
// prefix, sorted. A symbolic link to a directory is a pack like the
// directory itself (packs are often linked in from elsewhere), so each
// entry is judged by os.Stat, which follows links, not by its own type.
func Packs(goldenDir, prefix string) ([]string, error) {
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		return nil, fmt.Errorf("golden dir: %w", err)
	}
	var packs []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(goldenDir, e.Name())); err == nil && fi.IsDir() {
			packs = append(packs, e.Name())
		}
	}
	sort.Strings(packs)
	return packs, nil
}

// Run runs the checks of the named packs of goldenDir (as Packs lists
// them) on backend b, in the order given. The dac-* and speaker-* checks
// cover every such pack of goldenDir at their first name; names of no
// known kind add nothing, so an empty result means nothing was recognised.
func Run(goldenDir string, packs []string, b compute.Backend) []check.Result {
	var results []check.Result
	dacDone, speakerDone := false, false
	for _, name := range packs {
		pack := filepath.Join(goldenDir, name)
		switch {
		case strings.HasPrefix(name, "zonos-"):
			results = append(results, Zonos(pack, b)...)
		case name == "sampling":
			results = append(results, Sampling(pack)...)
			results = append(results, DeviceSampling(pack, b)...)
			results = append(results, Loops(pack)...)
		case strings.HasPrefix(name, "dac-"):
			if !dacDone {
				results = append(results, DAC(goldenDir, b)...)
				dacDone = true
			}
		case name == "text":
			results = append(results, Text(goldenDir)...)
		case name == "resample":
			results = append(results, Resample(goldenDir)...)
		case strings.HasPrefix(name, "speaker-"):
			if !speakerDone {
				results = append(results, Speaker(goldenDir, b)...)
				speakerDone = true
			}
		}
	}
	return results
}
