package dac

import (
	"math"
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

// TestAudioTolRationale measures what AudioTol rests on, on the CPU
// backend (every convolution summed in float64): the golden audio's own
// distance from that decode, and how far a one-ulp change of the latent
// moves the audio. If the pack were regenerated without its offset (the
// first figure well under RelTol) or the decoder stopped amplifying (the
// second tiny), this fails, and AudioTol should go back to RelTol.
func TestAudioTolRationale(t *testing.T) {
	dir := golden.Pack(t, "dac-tiny")
	be := cpu.New(0)
	m, err := Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	io := golden.Open(t, "dac-tiny", "io.safetensors")
	codes, err := readCodes(io, "codes", m.cfg.NCodebooks)
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
	l := m.fromCodes(codes)
	lat := be.ReadF32(l)
	be.Free(l)
	decode := func(latent []float32) []float32 {
		x := be.FromF32(latent, 1, len(latent)/len(codes[0]), len(codes[0]))
		a := m.decoder.forward(be, x)
		defer be.Free(a)
		be.Free(x)
		return be.ReadF32(a)
	}
	ref := decode(lat)
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
	moved, _ := check.MaxAbsDiff(decode(bumped), ref)
	t.Logf("golden vs the float64-summed decode: %.3g; one-ulp latent change moves the audio %.3g", own, moved)
	if own < 0.5*check.RelTol(1) {
		t.Errorf("the golden audio is only %.3g from the float64-summed decode: AudioTol (%g) can go back to RelTol", own, AudioTol)
	}
	if moved < 5e-6 {
		t.Errorf("a one-ulp latent change moves the audio only %.3g: the decoder no longer amplifies rounding", moved)
	}
}
