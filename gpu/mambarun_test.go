//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestMamba2Run: the persistent run of Mamba2 blocks (mamba_run) against
// the same blocks one by one (AddLayerNorm, then Mamba2Block) on copies of
// the same states, over three consecutive steps: outputs, residual stream
// and both states agree to rounding (the norms' sums are added in other
// orders). Runs of 1, 3 (the hybrid's) and 9 blocks (two launches), with
// and without an incoming residual and a norm bias, for one and two rows.
func TestMamba2Run(t *testing.T) {
	need(t)
	s := compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}
	if !gb.runFits(s, 2048, 2) {
		t.Skip("mamba_run needs sm_90")
	}
	r := rand.New(rand.NewPCG(41, 42))
	const d = 2048
	C := s.DInner + 2*s.DState
	E := 2*s.DInner + 2*s.DState + s.Heads
	type blockW struct {
		nw, nb, wi, wo compute.Tensor
		w              compute.Mamba2Weights
	}
	var ws []blockW
	for i := 0; i < 9; i++ {
		_, w := mambaWeights(t, r, s, compute.BF16)
		bw := blockW{
			nw: randW(t, r, compute.F32, 1, d).g,
			wi: randW(t, r, compute.BF16, 1/math.Sqrt(d), E, d).g,
			wo: randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g,
			w:  w,
		}
		if i%2 == 0 {
			bw.nb = randW(t, r, compute.F32, 0.2, d).g
		}
		ws = append(ws, bw)
	}
	for _, c := range []struct {
		L, B     int
		residual bool
	}{{3, 2, true}, {3, 2, false}, {1, 2, true}, {9, 2, true}, {3, 1, true}} {
		var convs, ssms [2][]compute.Tensor
		for i := 0; i < c.L; i++ {
			cv, sv := randVals(r, c.B*C*s.DConv, 1), randVals(r, c.B*s.Heads*s.HeadDim*s.DState, 0.5)
			for k := range 2 {
				convs[k] = append(convs[k], gb.FromF32(cv, c.B, C, s.DConv))
				ssms[k] = append(ssms[k], gb.FromF32(sv, c.B, s.Heads, s.HeadDim, s.DState))
			}
		}
		blocks := make([]compute.Mamba2RunBlock, c.L)
		for i := range blocks {
			blocks[i] = compute.Mamba2RunBlock{NormW: ws[i].nw, NormB: ws[i].nb, InProj: ws[i].wi, OutProj: ws[i].wo,
				W: ws[i].w, ConvState: convs[0][i], SSMState: ssms[0][i], Spec: s}
		}
		for step := 0; step < 3; step++ {
			h := gb.FromF32(randVals(r, c.B*d, 1), c.B, 1, d)
			var res compute.Tensor
			if c.residual {
				res = gb.FromF32(randVals(r, c.B*d, 1), c.B, 1, d)
			}
			h1, r1, ok := gb.Mamba2Run(h, res, blocks, 1e-5)
			if !ok {
				t.Fatalf("Mamba2Run declined %+v", c)
			}
			h2, r2 := h, res
			for i := 0; i < c.L; i++ {
				x, rr := gb.AddLayerNorm(h2, r2, ws[i].nw, ws[i].nb, 1e-5)
				y, ok := gb.Mamba2Block(x, ws[i].wi, ws[i].wo, ws[i].w, convs[1][i], ssms[1][i], s)
				if !ok {
					t.Fatal("Mamba2Block declined")
				}
				h2, r2 = y, rr
			}
			name := fmt.Sprintf("Mamba2Run L%d B%d residual %v step %d", c.L, c.B, c.residual, step)
			checkVals(t, name+" hidden", gb.ReadF32(h2), gb.ReadF32(h1), 1e-4)
			checkVals(t, name+" residual", gb.ReadF32(r2), gb.ReadF32(r1), 1e-4)
			for i := 0; i < c.L; i++ {
				checkVals(t, fmt.Sprintf("%s layer %d conv state", name, i), gb.ReadF32(convs[1][i]), gb.ReadF32(convs[0][i]), 1e-4)
				checkVals(t, fmt.Sprintf("%s layer %d ssm state", name, i), gb.ReadF32(ssms[1][i]), gb.ReadF32(ssms[0][i]), 1e-4)
			}
			if t.Failed() {
				return
			}
		}
	}
	// Declined: three rows, two positions, another model width.
	conv, ssm := gb.Zeros(3, C, s.DConv), gb.Zeros(3, s.Heads, s.HeadDim, s.DState)
	bl := []compute.Mamba2RunBlock{{NormW: ws[0].nw, InProj: ws[0].wi, OutProj: ws[0].wo, W: ws[0].w, ConvState: conv, SSMState: ssm, Spec: s}}
	for _, x := range []compute.Tensor{gb.FromF32(randVals(r, 3*d, 1), 3, 1, d), gb.FromF32(randVals(r, 2*d, 1), 1, 2, d),
		gb.FromF32(randVals(r, 2*1024, 1), 2, 1, 1024)} {
		if _, _, ok := gb.Mamba2Run(x, nil, bl, 1e-5); ok {
			t.Errorf("Mamba2Run took hidden %v", x.Shape())
		}
	}
}
