package sample

import (
	"testing"

	"zonostream/internal/check"
	"zonostream/internal/golden"
)

func TestGoldenSampling(t *testing.T) {
	for _, r := range Conformance(golden.Pack(t, "sampling")) {
		if r.Status != check.Pass {
			t.Error(r.Line())
		} else {
			t.Log(r.Line())
		}
	}
}
