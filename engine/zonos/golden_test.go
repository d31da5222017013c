package zonos_test

import (
	"testing"

	"zonostream/engine/cpu"
	"zonostream/internal/check"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// report fails the test on every failed check and logs the rest.
func report(t *testing.T, rs []check.Result) {
	t.Helper()
	for _, r := range rs {
		if r.Status == check.Fail {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}

func runPack(t *testing.T, name string) {
	report(t, conformance.Zonos(golden.Pack(t, name), cpu.New(0)))
}

func TestGoldenHybrid(t *testing.T)      { runPack(t, "zonos-hybrid-tiny") }
func TestGoldenTransformer(t *testing.T) { runPack(t, "zonos-transformer-tiny") }

// TestGoldenLoops runs the sampling pack's loop cases through the generate
// loop (GenerateFrom over the reference's logits).
func TestGoldenLoops(t *testing.T) {
	report(t, conformance.Loops(golden.Pack(t, "sampling")))
}
