package dac

import (
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// randomModel builds a randomly initialised model of configuration cfg.
func randomModel(t testing.TB, cfg Config, be compute.Backend, seed uint64) *Model {
	t.Helper()
	src, err := RandomSource(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, src, be)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// narrow44k is dac_44khz's geometry (strides, kernels, dilations: the
// receptive field) with few channels, for -short runs.
func narrow44k() Config {
	c := Dac44kHz()
	c.EncoderHiddenSize, c.DecoderHiddenSize, c.HiddenSize = 4, 64, 32
	return c
}

func randomCodes(cfg Config, frames int, seed uint64) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	codes := make([][]int32, cfg.NCodebooks)
	for k := range codes {
		codes[k] = make([]int32, frames)
		for t := range codes[k] {
			codes[k][t] = int32(r.IntN(cfg.CodebookSize))
		}
	}
	return codes
}
