//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// TestGuide: CFG on the device is bit-identical to the host formula
// (engine/zonos guide: u + (c − u)·scale, pad columns −inf), and the EOS
// bias masks column eos of every row but the first.
func TestGuide(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(41, 42))
	for _, c := range []struct {
		R, W, pad, eos int
		bias           bool
		scale          float32
	}{{9, 1026, 1025, 1024, false, 2}, {9, 1026, 1025, 1024, true, 3.5}, {3, 17, 15, 4, true, 0.5}, {1, 5, 5, 0, false, 1.7}, {27, 1026, 1025, 1024, true, 2}} {
		heads := randVals(r, 2*c.R*c.W, 4)
		got := gb.ReadF32(gb.Guide(gb.FromF32(heads, 2, c.R, c.W), c.scale, c.pad, c.eos, c.bias))
		n := c.R * c.W
		bad := 0
		for i := 0; i < n; i++ {
			u, cd := heads[n+i], heads[i]
			d := cd - u
			m := d * c.scale
			want := u + m
			if col, row := i%c.W, i/c.W; col >= c.pad || (c.bias && row%9 != 0 && col == c.eos) {
				want = float32(math.Inf(-1))
			}
			if math.Float32bits(want) != math.Float32bits(got[i]) {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("Guide %+v: %d of %d values differ from the host", c, bad, n)
		} else {
			t.Logf("Guide %+v: %d values bit-identical", c, n)
		}
	}
}

// samplerCase is one configuration of the sampler knobs.
type samplerCase struct {
	name string
	p    sample.Params
}

func samplerCases() []samplerCase {
	base := sample.Params{Temperature: 1, RepetitionPenalty: 1}
	with := func(f func(*sample.Params)) sample.Params { p := base; f(&p); return p }
	return []samplerCase{
		{"greedy", with(func(p *sample.Params) { p.Temperature = 0 })},
		{"greedy+penalty", with(func(p *sample.Params) { p.Temperature = 0; p.RepetitionPenalty = 3; p.RepetitionWindow = 2 })},
		{"plain T=1", base},
		{"T=0.7", with(func(p *sample.Params) { p.Temperature = 0.7 })},
		{"T=1.6", with(func(p *sample.Params) { p.Temperature = 1.6 })},
		{"reference defaults (penalty 3, window 2)", sample.Reference()},
		{"generate defaults (min_p 0.1)", sample.Defaults()},
		{"penalty 1.7 whole history", with(func(p *sample.Params) { p.RepetitionPenalty = 1.7 })},
		{"penalty 0.8 window 5", with(func(p *sample.Params) { p.RepetitionPenalty = 0.8; p.RepetitionWindow = 5 })},
		{"unified", with(func(p *sample.Params) { p.Linear = 0.5; p.Conf = 0.3; p.Quad = 0.1 })},
		{"unified negative conf/quad", with(func(p *sample.Params) { p.Linear = 0.8; p.Conf = -0.4; p.Quad = -0.2 })},
		{"top_p 0.9", with(func(p *sample.Params) { p.TopP = 0.9 })},
		{"top_p 0.3 T=0.8", with(func(p *sample.Params) { p.TopP = 0.3; p.Temperature = 0.8 })},
		{"top_k 20", with(func(p *sample.Params) { p.TopK = 20 })},
		{"top_k 1", with(func(p *sample.Params) { p.TopK = 1 })},
		{"top_k > W", with(func(p *sample.Params) { p.TopK = 100000 })},
		{"min_p 0.05", with(func(p *sample.Params) { p.MinP = 0.05 })},
		{"top_p+top_k+min_p", with(func(p *sample.Params) { p.TopP = 0.95; p.TopK = 50; p.MinP = 0.02 })},
		{"everything", sample.Params{Temperature: 0.9, TopP: 0.8, TopK: 40, MinP: 0.05, Linear: 0.6, Conf: 0.2, Quad: 0.05,
			RepetitionPenalty: 2.5, RepetitionWindow: 4}},
	}
}

// samplerHistory is a [R, H] history with duplicates, MASK-like tokens
// past the width (clamped to W−1), negative cells and real tokens.
func samplerHistory(r *rand.Rand, R, H, W int) []int32 {
	h := make([]int32, R*H)
	for i := range h {
		switch x := r.IntN(10); {
		case x == 0:
			h[i] = -1
		case x == 1:
			h[i] = int32(W - 1 + r.IntN(3)) // ≥ W−1: clamped
		case x < 5 && i > 0:
			h[i] = h[i-1] // duplicates
		default:
			h[i] = int32(r.IntN(W))
		}
	}
	return h
}

func toSpec(p sample.Params) compute.SampleSpec {
	return compute.SampleSpec{Temperature: p.Temperature, TopP: p.TopP, MinP: p.MinP, TopK: p.TopK,
		Linear: p.Linear, Conf: p.Conf, Quad: p.Quad, Penalty: p.RepetitionPenalty, Window: p.RepetitionWindow}
}

// hostTokens runs engine/sample with Philox noise advanced to counter.
func hostTokens(p sample.Params, logits []float32, W int, hist []int32, H int, seed, counter uint64, q []float32) []int32 {
	var noise sample.Noise
	if q != nil {
		noise = &sample.Fixed{Q: q}
	} else {
		ph := sample.NewPhilox(seed)
		if counter > 0 {
			ph.Exp(make([]float32, 4*counter)) // advance the counter
		}
		noise = ph
	}
	var history [][]int32
	if hist != nil {
		R := len(logits) / W
		history = make([][]int32, R)
		for c := range history {
			history[c] = hist[c*H : (c+1)*H]
		}
	}
	return sample.New(p, noise).Sample(slices.Clone(logits), W, history)
}

// TestSampleMatchesHost: with identical logits, seed and counter the
// device sampler draws exactly the host sampler's tokens, for every
// stage and combination, widths real and odd, with and without history,
// Philox and stored noise.
func TestSampleMatchesHost(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(43, 44))
	total, bad := 0, 0
	for _, shape := range []struct{ R, W, H int }{{9, 1026, 12}, {9, 1026, 1}, {3, 37, 7}, {2, 2051, 30}, {1, 1, 3}} {
		for _, c := range samplerCases() {
			for trial := 0; trial < 6; trial++ {
				scale := []float64{1, 3, 8}[trial%3]
				logits := randVals(r, shape.R*shape.W, scale)
				if trial == 5 && shape.W > 4 { // ties and −inf pad columns
					for i := range logits {
						if i%shape.W >= shape.W-2 {
							logits[i] = float32(math.Inf(-1))
						} else if i%3 == 0 {
							logits[i] = 1.5
						}
					}
				}
				var hist []int32
				var hg compute.Tensor
				if trial%2 == 0 {
					hist = samplerHistory(r, shape.R, shape.H, shape.W)
					hg = gb.FromI32(hist, shape.R, shape.H)
				}
				seed, counter := r.Uint64(), uint64(r.IntN(1000))
				var q []float32
				var qg compute.Tensor
				if trial == 3 {
					q = make([]float32, len(logits))
					sample.NewPhilox(seed ^ 99).Exp(q)
					qg = gb.FromF32(q, shape.R, shape.W)
				}
				want := hostTokens(c.p, logits, shape.W, hist, shape.H, seed, counter, q)
				got := gb.ReadI32(gb.Sample(gb.FromF32(logits, shape.R, shape.W), hg, qg, toSpec(c.p), seed, counter))
				total++
				if !slices.Equal(want, got) {
					bad++
					t.Errorf("%s R%d W%d H%d trial %d (seed %d counter %d): device %v, host %v", c.name, shape.R, shape.W, shape.H, trial, seed, counter, got, want)
				}
			}
		}
	}
	t.Logf("%d sampler calls, %d identical to the host", total, total-bad)
}

// TestSampleSequence: a 200-step chain of draws with a growing history
// and a counter advancing as the host Philox does stays identical.
func TestSampleSequence(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(45, 46))
	const R, W, steps = 9, 1026, 200
	p := sample.Defaults()
	seed := uint64(12345)
	host := sample.New(p, sample.NewPhilox(seed))
	hist := make([][]int32, R)
	var counter uint64
	for s := 0; s < steps; s++ {
		logits := randVals(r, R*W, 2.5)
		var hg compute.Tensor
		H := len(hist[0])
		flat := make([]int32, 0, R*H)
		for _, h := range hist {
			flat = append(flat, h...)
		}
		var history [][]int32
		if H > 0 {
			hg = gb.FromI32(flat, R, H)
			history = hist
		}
		want := host.Sample(slices.Clone(logits), W, history)
		got := gb.ReadI32(gb.Sample(gb.FromF32(logits, R, W), hg, nil, toSpec(p), seed, counter))
		counter += (R*W + 3) / 4
		if !slices.Equal(want, got) {
			t.Fatalf("step %d: device %v, host %v", s, got, want)
		}
		for c := range hist {
			hist[c] = append(hist[c], want[c])
		}
	}
	t.Logf("%d steps identical", steps)
}

func BenchmarkSample(b *testing.B) {
	if noGPU != nil {
		b.Skip(noGPU)
	}
	r := rand.New(rand.NewPCG(1, 1))
	lg := gb.FromF32(randVals(r, 9*1026, 2), 9, 1026)
	hg := gb.FromI32(samplerHistory(r, 9, 2, 1026), 9, 2)
	spec := toSpec(sample.Defaults())
	for i := 0; i < b.N; i++ {
		gb.ReadI32(gb.Sample(lg, hg, nil, spec, 1, uint64(i)))
	}
	_ = fmt.Sprint()
}
