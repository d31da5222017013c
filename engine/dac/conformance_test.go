package dac

import (
	"testing"

	"zonostream/engine/cpu"
	"zonostream/internal/check"
	"zonostream/internal/golden"
)

// TestConformance runs the conformance checks on the dac-* golden packs.
func TestConformance(t *testing.T) {
	golden.Pack(t, "dac-tiny")
	rs := Conformance(golden.Dir(), cpu.New(0))
	for _, r := range rs {
		t.Log(r.Line())
		if r.Status == check.Fail {
			t.Error(r.Line())
		}
	}
}
