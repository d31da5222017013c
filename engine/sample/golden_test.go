package sample_test

import (
	"testing"

	"zonostream/internal/check"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// TestGoldenSampling runs the sampling pack's single-step cases through the
// host sampler: tokens identical, final distributions within the fp32 bar.
func TestGoldenSampling(t *testing.T) {
	for _, r := range conformance.Sampling(golden.Pack(t, "sampling")) {
		if r.Status != check.Pass {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}
