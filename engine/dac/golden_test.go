package dac_test

import (
	"math"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/internal/check"
	"zonostream/internal/conformance"
	"zonostream/internal/golden"
)

// TestConformance runs the conformance checks on the dac-* golden packs.
func TestConformance(t *testing.T) {
	golden.Pack(t, "dac-tiny")
	golden.Report(t, conformance.DAC(golden.Dir(), cpu.New(0)))
}

// TestAudioTolRationale measures what conformance.DACAudioTol rests on, on
// the CPU backend (every convolution summed in float64): the golden
// audio's own distance from that decode, and how far a one-ulp change of
// the latent moves the audio. If the pack were regenerated without its
// offset (the first figure well under RelTol) or the decoder stopped
// amplifying (the second tiny), this fails, and DACAudioTol should go back
// to RelTol.
func TestAudioTolRationale(t *testing.T) {
	dir := golden.Pack(t, "dac-tiny")
	m, err := dac.Load(dir, cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	io := golden.Open(t, "dac-tiny", "io.safetensors")
	codes, err := conformance.ReadCodes(io, "codes", m.Config().NCodebooks)
	if err != nil {
		t.Fatal(err)
	}
	at, err := io.Tensor("audio")
	if err != nil {
		t.Fatal(err)
	}
	gold, err := at.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	lat, err := m.FromCodes(codes)
	if err != nil {
		t.Fatal(err)
	}
	decodeLatent := func(latent []float32) []float32 { return m.DecodeLatent(latent, len(codes[0])) }
	ref := decodeLatent(lat)
	own, _ := check.MaxAbsDiff(ref, gold)
	bumped := append([]float32(nil), lat...)
	for i := range bumped { // one ulp up or down, alternating
		b := math.Float32bits(bumped[i])
		if i%2 == 0 {
			b++
		} else {
			b--
		}
		bumped[i] = math.Float32frombits(b)
	}
	moved, _ := check.MaxAbsDiff(decodeLatent(bumped), ref)
	t.Logf("golden vs the float64-summed decode: %.3g; one-ulp latent change moves the audio %.3g", own, moved)
	if own < 0.5*check.RelTol(1) {
		t.Errorf("the golden audio is only %.3g from the float64-summed decode: DACAudioTol (%g) can go back to RelTol", own, conformance.DACAudioTol)
	}
	if moved < 5e-6 {
		t.Errorf("a one-ulp latent change moves the audio only %.3g: the decoder no longer amplifies rounding", moved)
	}
}
