package dac_test

import (
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/internal/randmodel"
)

// randomModel builds a randomly initialised model of configuration cfg.
func randomModel(t testing.TB, cfg dac.Config, be compute.Backend, seed uint64) *dac.Model {
	t.Helper()
	src, err := randmodel.DAC(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dac.New(cfg, src, be)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// narrow44k is dac_44khz's geometry (strides, kernels, dilations: the
// receptive field) with few channels, for -short runs.
func narrow44k() dac.Config {
	c := dac.Dac44kHz()
	c.EncoderHiddenSize, c.DecoderHiddenSize, c.HiddenSize = 4, 64, 32
	return c
}

func randomCodes(cfg dac.Config, frames int, seed uint64) [][]int32 {
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

// decode is m.Decode of codes known to be valid.
func decode(t testing.TB, m *dac.Model, codes [][]int32) []float32 {
	t.Helper()
	a, err := m.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
