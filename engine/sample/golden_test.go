package sample_test

import (
	"testing"

	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// TestGoldenSampling runs the sampling pack's single-step cases through the
// host sampler: tokens identical, final distributions within the fp32 bar.
func TestGoldenSampling(t *testing.T) {
	golden.Report(t, conformance.Sampling(golden.Pack(t, "sampling")))
}
