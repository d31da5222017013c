//go:build cuda

package gpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestMamba2OutMatchesUnfused: the mixer with the gated norm folded into
// out_proj (Mamba2Out's decode path: mamba_step writing the weighted gated
// values and head sums, gemv_m2_gated scaling its outputs) gives Mamba2
// followed by Linear to fp32 rounding for the projected output (the row
// scale multiplies the sum instead of each input) and the same bits for
// both states, over a prefill and several decode steps, for one row and
// for a CFG pair; and the decode steps do take the fused kernel.
func TestMamba2OutMatchesUnfused(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		s compute.Mamba2Spec
		d int
	}{
		{compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, 2048}, // real hybrid
		{compute.Mamba2Spec{DInner: 128, Heads: 4, HeadDim: 32, DState: 40, Groups: 1, DConv: 3, Eps: 1e-5}, 72},
	} {
		s := c.s
		_, wg := mambaWeights(t, r, s, compute.BF16)
		out := randW(t, r, compute.BF16, 0.02, c.d, s.DInner).g
		C := s.DInner + 2*s.Groups*s.DState
		E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
		for _, B := range []int{1, 2} {
			convF, ssmF := gb.Zeros(B, C, s.DConv), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)
			convU, ssmU := gb.Zeros(B, C, s.DConv), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)
			for i, T := range []int{9, 1, 1, 1, 1} {
				in := gb.FromF32(randVals(r, B*T*E, 1), B, T, E)
				before := gb.k["gemv_m2_gated"].launches
				fused := gb.ReadF32(gb.Mamba2Out(in, wg, convF, ssmF, s, out))
				ran := gb.k["gemv_m2_gated"].launches - before
				plain := gb.ReadF32(gb.Linear(gb.Mamba2(in, wg, convU, ssmU, s), out, nil))
				name := fmt.Sprintf("Di%d B%d step %d (T %d)", s.DInner, B, i, T)
				if want := T == 1 && !gatedGemvOff; (ran == 1) != want {
					t.Errorf("%s: gemv_m2_gated ran %d times, fused path expected %v", name, ran, want)
				}
				checkVals(t, name+" output", plain, fused, 1e-6)
				checkVals(t, name+" conv state", gb.ReadF32(convU), gb.ReadF32(convF), 0)
				checkVals(t, name+" ssm state", gb.ReadF32(ssmU), gb.ReadF32(ssmF), 0)
			}
		}
	}
}
