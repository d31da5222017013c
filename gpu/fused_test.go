//go:build cuda

package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// unfused runs f with the fused projections turned off: the GPU's own
// composition, for comparisons within the backend.
func unfused(f func()) {
	fuseOff = true
	defer func() { fuseOff = false }()
	f()
}

// TestFusedProjections checks each fused projection (compute.
// FusedProjections) against the CPU backend's composition and against the
// GPU's own unfused ops: decode shapes of the hybrid, one and two rows,
// with and without residual and biases, odd N. The residual sum must be
// exact (it is an addition, whoever does it).
func TestFusedProjections(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(91, 92))
	for _, c := range []struct {
		m, k, n     int
		res, biases bool
	}{
		{2, 2048, 8512, true, false}, {1, 2048, 3072, true, false}, {2, 2048, 333, false, true}, {2, 1000, 9234, true, true}, {2, 4096, 64, true, true},
	} {
		name := fmt.Sprintf("AddLayerNormLinear m%d k%d n%d res %v bias %v", c.m, c.k, c.n, c.res, c.biases)
		x := randF32(r, 1, c.m, 1, c.k)
		var res pair
		if c.res {
			res = randF32(r, 1, c.m, 1, c.k)
		}
		nw, w := randF32(r, 1, c.k), randW(t, r, compute.BF16, 0.03, c.n, c.k)
		var nb, bias pair
		if c.biases {
			nb, bias = randF32(r, 0.2, c.k), randF32(r, 0.2, c.n)
		}
		yc, sc := compute.AddLayerNormLinear(cb, x.c, res.c, nw.c, nb.c, 1e-5, w.c, bias.c)
		yg, sg := compute.AddLayerNormLinear(gb, x.g, res.g, nw.g, nb.g, 1e-5, w.g, bias.g)
		check(t, name, pair{yc, yg}, tol)
		check(t, name+" sum", pair{sc, sg}, 0)
		var yu compute.Tensor
		unfused(func() { yu, _ = compute.AddLayerNormLinear(gb, x.g, res.g, nw.g, nb.g, 1e-5, w.g, bias.g) })
		checkVals(t, name+" vs unfused", gb.ReadF32(yu), gb.ReadF32(yg), 1e-6)
	}
}

// TestFusedMamba2Linear runs the fused mixer + out_proj and the
// composition on twin states for a few decode steps (after a prefill):
// outputs agree with the CPU and with the unfused GPU ops, and the states
// stay bit-identical to the unfused ones.
func TestFusedMamba2Linear(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(93, 94))
	for i, s := range []compute.Mamba2Spec{
		{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, // real hybrid
		{DInner: 96, Heads: 6, HeadDim: 16, DState: 20, Groups: 2, DConv: 3, Eps: 1e-5},     // odd
	} {
		const B = 2
		wc, wg := mambaWeights(t, r, s, compute.BF16)
		out := randW(t, r, compute.BF16, 0.02, 2048-i*2000, s.DInner)
		C := s.DInner + 2*s.Groups*s.DState
		E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
		conv := pair{cb.Zeros(B, C, s.DConv), gb.Zeros(B, C, s.DConv)}
		ssm := pair{cb.Zeros(B, s.Heads, s.HeadDim, s.DState), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)}
		convU, ssmU := gb.Zeros(B, C, s.DConv), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)
		for step, T := range []int{5, 1, 1, 1} {
			in := randF32(r, 1, B, T, E)
			name := fmt.Sprintf("Mamba2Linear Di%d G%d step %d T %d", s.DInner, s.Groups, step, T)
			yc := compute.Mamba2Linear(cb, in.c, wc, conv.c, ssm.c, s, out.c)
			yg := compute.Mamba2Linear(gb, in.g, wg, conv.g, ssm.g, s, out.g)
			check(t, name, pair{yc, yg}, tol)
			var yu compute.Tensor
			unfused(func() { yu = compute.Mamba2Linear(gb, in.g, wg, convU, ssmU, s, out.g) })
			checkVals(t, name+" vs unfused", gb.ReadF32(yu), gb.ReadF32(yg), 1e-6)
			checkVals(t, name+" conv state vs unfused", gb.ReadF32(convU), gb.ReadF32(conv.g), 0)
			checkVals(t, name+" ssm state vs unfused", gb.ReadF32(ssmU), gb.ReadF32(ssm.g), 0)
		}
	}
}
