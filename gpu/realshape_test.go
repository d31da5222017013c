//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/internal/randmodel"
)

// Full-width checks: the tiny golden packs cannot reveal errors that only
// appear at real widths, so a randomly initialised real-shape DAC and a
// real-shape hybrid block pair (attention + MLP, Mamba2) run on both
// backends and are compared.

func snr(ref, got []float32) float64 {
	var s, n float64
	for i := range ref {
		d := float64(ref[i]) - float64(got[i])
		s += float64(ref[i]) * float64(ref[i])
		n += d * d
	}
	if n == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(s/n)
}

// realDAC is the 44 kHz DAC of the real shapes with random weights (the
// same on every backend) on be.
func realDAC(t testing.TB, be compute.Backend) *dac.Model {
	t.Helper()
	cfg := dac.Dac44kHz()
	src, err := randmodel.DAC(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dac.New(cfg, src, be)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDACRealShape(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("full-width DAC in -short")
	}
	cfg := dac.Dac44kHz()
	mc, mg := realDAC(t, cb), realDAC(t, gb)
	r := rand.New(rand.NewPCG(8, 1))
	const frames = 16
	codes := make([][]int32, cfg.NCodebooks)
	for k := range codes {
		codes[k] = make([]int32, frames)
		for i := range codes[k] {
			codes[k][i] = int32(r.IntN(cfg.CodebookSize))
		}
	}
	ac, err := mc.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := mg.Decode(codes)
	if err != nil {
		t.Fatal(err)
	}
	maxd, maxr, cos := diff(ac, ag)
	s := snr(ac, ag)
	t.Logf("DAC 44k real shape, %d frames → %d samples: SNR %.1f dB, max|Δ| %.3g, max|ref| %.3g, cos %.9f", frames, len(ac), s, maxd, maxr, cos)
	if len(ac) != len(ag) || s < 50 {
		t.Errorf("DAC real shape: SNR %.1f dB < 50 dB", s)
	}
}

// hybridPair is one attention+MLP block and one Mamba2 block of the real
// Zonos hybrid (d_model 2048), with random bf16 weights.
type hybridPair struct {
	n1w, n1b, n2w, n2b, n3w, n3b pair
	qkv, out, fc1, fc2           pair
	in, mout                     pair
	mwc, mwg                     compute.Mamba2Weights
	aspec                        compute.AttentionSpec
	mspec                        compute.Mamba2Spec
}

func TestHybridRealShape(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("full-width hybrid blocks in -short")
	}
	r := rand.New(rand.NewPCG(23, 24))
	const d = 2048
	bf := compute.BF16
	s := 1 / math.Sqrt(d)
	hp := hybridPair{
		n1w: randW(t, r, bf, 0.2, d), n1b: randW(t, r, bf, 0.1, d),
		n2w: randW(t, r, bf, 0.2, d), n2b: randW(t, r, bf, 0.1, d),
		n3w: randW(t, r, bf, 0.2, d), n3b: randW(t, r, bf, 0.1, d),
		qkv: randW(t, r, bf, s, 24*128, d), out: randW(t, r, bf, s, d, d),
		fc1: randW(t, r, bf, s, 2*8192, d), fc2: randW(t, r, bf, 1/math.Sqrt(8192), d, 8192),
		in: randW(t, r, bf, s, 8512, d), mout: randW(t, r, bf, 1/math.Sqrt(4096), d, 4096),
		aspec: compute.AttentionSpec{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 128, Rotary: compute.RotaryHalves, RotaryBase: 10000},
		mspec: compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5},
	}
	hp.mwc, hp.mwg = mambaWeights(t, r, hp.mspec, bf)
	const B, prefix, steps, maxT = 2, 80, 16, 128
	type state struct{ k, v, conv, ssm compute.Tensor }
	newState := func(be compute.Backend) state {
		return state{be.Zeros(B, maxT, 4, 128), be.Zeros(B, maxT, 4, 128), be.Zeros(B, 4096+256, 4), be.Zeros(B, 64, 64, 128)}
	}
	forward := func(be compute.Backend, sel func(pair) compute.Tensor, mw compute.Mamba2Weights, st state, x compute.Tensor, pos int) compute.Tensor {
		h, res := be.AddLayerNorm(x, nil, sel(hp.n1w), sel(hp.n1b), 1e-5)
		qkv := be.Linear(h, sel(hp.qkv), nil)
		hid := be.Linear(be.Attention(qkv, st.k, st.v, compute.Positions{Start: pos}, hp.aspec), sel(hp.out), nil)
		h, res = be.AddLayerNorm(hid, res, sel(hp.n2w), sel(hp.n2b), 1e-5)
		hid = be.Linear(be.SwiGLU(be.Linear(h, sel(hp.fc1), nil)), sel(hp.fc2), nil)
		h, res = be.AddLayerNorm(hid, res, sel(hp.n3w), sel(hp.n3b), 1e-5)
		hid = be.Linear(be.Mamba2(be.Linear(h, sel(hp.in), nil), mw, st.conv, st.ssm, hp.mspec), sel(hp.mout), nil)
		return be.Add(hid, res)
	}
	sc, sg := newState(cb), newState(gb)
	cpuSel := func(p pair) compute.Tensor { return p.c }
	gpuSel := func(p pair) compute.Tensor { return p.g }
	pos := 0
	worst := 1.0
	for i, T := 0, prefix; i <= steps; i, T = i+1, 1 {
		x := randF32(r, 1, B, T, d)
		oc := forward(cb, cpuSel, hp.mwc, sc, x.c, pos)
		og := forward(gb, gpuSel, hp.mwg, sg, x.g, pos)
		ref, got := cb.ReadF32(oc), gb.ReadF32(og)
		maxd, maxr, cos := diff(ref, got)
		worst = math.Min(worst, cos)
		name := "prefill"
		if i > 0 {
			name = fmt.Sprintf("step %d", i)
		}
		t.Logf("hybrid real-shape blocks %-8s T %2d: max|Δ| %.3g max|ref| %.3g cos %.9f", name, T, maxd, maxr, cos)
		if cos < 0.9999 || maxd > 1e-3*math.Max(1, maxr) {
			t.Errorf("hybrid real shape %s: cos %.9f max|Δ| %.3g", name, cos, maxd)
		}
		pos += T
	}
	checkVals(t, "hybrid real-shape ssm state after 16 steps", cb.ReadF32(sc.ssm), gb.ReadF32(sg.ssm), 1e-3)
	checkVals(t, "hybrid real-shape k cache after 16 steps", cb.ReadF32(sc.k), gb.ReadF32(sg.k), 1e-4)
	t.Logf("worst cosine %.9f", worst)

	// Step time of the two blocks at batch 2 (eager: ops launched one by
	// one from Go; then the same ops captured in a CUDA graph): logged,
	// not a gate.
	x := gb.FromF32(randVals(r, B*d, 1), B, 1, d)
	const reps = 50
	weightBytes := 2.0 * (3072*2048 + 2048*2048 + 16384*2048 + 2048*8192 + 8512*2048 + 2048*4096)
	report := func(what string, run func()) {
		run()
		gb.Synchronize()
		start := time.Now()
		for i := 0; i < reps; i++ {
			run()
		}
		gb.Synchronize()
		per := time.Since(start).Seconds() / reps
		t.Logf("hybrid block pair decode step, %s: %.3f ms (%.0f GB/s of bf16 weights, %.1f MB)", what, per*1e3, weightBytes/per/1e9, weightBytes/1e6)
	}
	report("eager", func() { forward(gb, gpuSel, hp.mwg, sg, x, pos) })
	g, err := gb.Capture(func() { forward(gb, gpuSel, hp.mwg, sg, x, pos) })
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	report("CUDA graph", func() {
		if err := g.Launch(); err != nil {
			t.Fatal(err)
		}
	})
}
