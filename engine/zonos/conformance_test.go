package zonos

import (
	"testing"

	"zonostream/engine/cpu"
	"zonostream/internal/check"
	"zonostream/internal/golden"
)

func runPack(t *testing.T, name string) {
	for _, r := range Conformance(golden.Pack(t, name), cpu.New(0)) {
		if r.Status == check.Fail {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}

func TestGoldenHybrid(t *testing.T)      { runPack(t, "zonos-hybrid-tiny") }
func TestGoldenTransformer(t *testing.T) { runPack(t, "zonos-transformer-tiny") }

func TestGoldenLoops(t *testing.T) {
	for _, r := range LoopConformance(golden.Pack(t, "sampling")) {
		if r.Status == check.Fail {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}
