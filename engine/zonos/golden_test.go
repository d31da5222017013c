package zonos_test

import (
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

func runPack(t *testing.T, name string) {
	golden.Report(t, conformance.Zonos(golden.Pack(t, name), cpu.New(0)))
}

func TestGoldenHybrid(t *testing.T)      { runPack(t, "zonos-hybrid-tiny") }
func TestGoldenTransformer(t *testing.T) { runPack(t, "zonos-transformer-tiny") }

// TestGoldenLoops runs the sampling pack's loop cases through the generate
// loop (GenerateFrom over the reference's logits).
func TestGoldenLoops(t *testing.T) {
	golden.Report(t, conformance.Loops(golden.Pack(t, "sampling")))
}
