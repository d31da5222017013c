//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"zonostream/engine/compute"
)

// TestMambaBlockMatchesOps: mamba_block (one kernel for a whole Mamba2
// residual block of a decode step) gives the same bits as the ops one by
// one on this backend — AddLayerNorm, the in_proj GEMV, Mamba2 (mamba_step
// and mamba_norm_v4), the out_proj GEMV — for the output, the new residual
// and both states, over three consecutive steps (states carried, the grid
// barrier reused), on the real hybrid shape and an odd one, for the CFG
// pair and a single row, with and without a LayerNorm bias. The ops are
// themselves checked against engine/cpu; the first step is also compared
// with engine/cpu here.
func TestMambaBlockMatchesOps(t *testing.T) {
	need(t)
	if gb.gridBar == 0 {
		t.Skip("this device cannot run mamba_block (shared memory); the ops run one by one")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		d    int
		s    compute.Mamba2Spec
		rows int
		bias bool
	}{
		{2048, compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, 2, true},
		{2048, compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, 1, false},
		{104, compute.Mamba2Spec{DInner: 128, Heads: 4, HeadDim: 32, DState: 40, Groups: 2, DConv: 3, Eps: 1e-5}, 2, true},
		{256, compute.Mamba2Spec{DInner: 512, Heads: 8, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, 2, true},
	} {
		s, D, M := c.s, c.d, c.rows
		name := fmt.Sprintf("D%d Di%d N%d G%d rows %d bias %v", D, s.DInner, s.DState, s.Groups, M, c.bias)
		C := s.DInner + 2*s.Groups*s.DState
		E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
		wc, wg := mambaWeights(t, r, s, compute.BF16)
		lnw := randW(t, r, compute.BF16, 1, D)
		var lnb pair
		if c.bias {
			lnb = randW(t, r, compute.BF16, 0.2, D)
		}
		wi := randW(t, r, compute.BF16, 0.03, E, D)
		wo := randW(t, r, compute.BF16, 0.03, D, s.DInner)
		convV, ssmV := randVals(r, M*C*s.DConv, 0.5), randVals(r, M*s.Heads*s.HeadDim*s.DState, 0.5)
		states := func() (compute.Tensor, compute.Tensor) {
			return gb.FromF32(convV, M, C, s.DConv), gb.FromF32(ssmV, M, s.Heads, s.HeadDim, s.DState)
		}
		convO, ssmO := states()
		convF, ssmF := states()
		convC, ssmC := cb.FromF32(convV, M, C, s.DConv), cb.FromF32(ssmV, M, s.Heads, s.HeadDim, s.DState)
		hv, rv := randVals(r, M*D, 1), randVals(r, M*D, 1)
		hO, rO := gb.FromF32(hv, M, 1, D), gb.FromF32(rv, M, 1, D)
		hF, rF := hO, rO
		for step := 0; step < 3; step++ {
			x, resO := gb.AddLayerNorm(hO, rO, lnw.g, lnb.g, 1e-5)
			outO := gb.Linear(gb.Mamba2(gb.Linear(x, wi.g, nil), wg, convO, ssmO, s), wo.g, nil)
			outF, resF, ok := gb.MambaBlock(hF, rF, lnw.g, lnb.g, 1e-5, wi.g, wo.g, wg, convF, ssmF, s, wi.g)
			if !ok {
				t.Fatalf("%s: MambaBlock did not take the block", name)
			}
			at := fmt.Sprintf("%s step %d", name, step)
			checkVals(t, at+" output", gb.ReadF32(outO), gb.ReadF32(outF), 0)
			checkVals(t, at+" residual", gb.ReadF32(resO), gb.ReadF32(resF), 0)
			checkVals(t, at+" conv state", gb.ReadF32(convO), gb.ReadF32(convF), 0)
			checkVals(t, at+" ssm state", gb.ReadF32(ssmO), gb.ReadF32(ssmF), 0)
			if step == 0 {
				xc, _ := cb.AddLayerNorm(cb.FromF32(hv, M, 1, D), cb.FromF32(rv, M, 1, D), lnw.c, lnb.c, 1e-5)
				outC := cb.Linear(cb.Mamba2(cb.Linear(xc, wi.c, nil), wc, convC, ssmC, s), wo.c, nil)
				checkVals(t, at+" output vs engine/cpu", cb.ReadF32(outC), gb.ReadF32(outF), tol)
			}
			hO, rO, hF, rF = outO, resO, outF, resF
		}
	}
}

// TestMambaBlockDeclines: shapes mamba_block does not take come back
// ok false (the caller runs the ops), not wrong numbers: more than two
// rows, more than one position, F32 projections.
func TestMambaBlockDeclines(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(23, 24))
	s := compute.Mamba2Spec{DInner: 128, Heads: 4, HeadDim: 32, DState: 40, Groups: 2, DConv: 3, Eps: 1e-5}
	const D = 64
	C := s.DInner + 2*s.Groups*s.DState
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	_, wg := mambaWeights(t, r, s, compute.BF16)
	lnw := randW(t, r, compute.BF16, 1, D)
	wi, wo := randW(t, r, compute.BF16, 0.03, E, D), randW(t, r, compute.BF16, 0.03, D, s.DInner)
	wi32 := randW(t, r, compute.F32, 0.03, E, D)
	for _, c := range []struct {
		name     string
		rows, t  int
		inProj   compute.Tensor
		wantTake bool
	}{
		{"two rows, one position", 2, 1, wi.g, true},
		{"four rows", 4, 1, wi.g, false},
		{"two positions", 2, 2, wi.g, false},
		{"F32 in_proj", 2, 1, wi32.g, false},
	} {
		h := gb.FromF32(randVals(r, c.rows*c.t*D, 1), c.rows, c.t, D)
		conv, ssm := gb.Zeros(c.rows, C, s.DConv), gb.Zeros(c.rows, s.Heads, s.HeadDim, s.DState)
		_, _, ok := gb.MambaBlock(h, h, lnw.g, nil, 1e-5, c.inProj, wo.g, wg, conv, ssm, s, nil)
		if ok != (c.wantTake && gb.gridBar != 0) {
			t.Errorf("%s: took it %v", c.name, ok)
		}
	}
}

// TestMambaBlockPhases (ZONOS_PROFILE=1, measurements only): where
// mamba_block's time goes on the real hybrid shape, from the global-timer
// stamps each block takes after each phase; logs the median over 30
// launches of each phase's mean over blocks.
func TestMambaBlockPhases(t *testing.T) {
	need(t)
	if os.Getenv("ZONOS_PROFILE") == "" || gb.gridBar == 0 {
		t.Skip("ZONOS_PROFILE=1 measures mamba_block's phases")
	}
	r := rand.New(rand.NewPCG(25, 26))
	s := compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}
	const D, M = 2048, 2
	C := s.DInner + 2*s.Groups*s.DState
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	_, wg := mambaWeights(t, r, s, compute.BF16)
	lnw := randW(t, r, compute.BF16, 1, D)
	wi, wo := randW(t, r, compute.BF16, 0.03, E, D), randW(t, r, compute.BF16, 0.03, D, s.DInner)
	conv, ssm := gb.Zeros(M, C, s.DConv), gb.Zeros(M, s.Heads, s.HeadDim, s.DState)
	h := gb.FromF32(randVals(r, M*D, 1), M, 1, D)
	st := gb.Zeros(gb.sms * mbStamps * 2)
	mambaBlockStamps = cast(st).ptr()
	defer func() { mambaBlockStamps = 0 }()
	names := []string{"start → waited", "LN loads", "LN stats", "LN normalize", "in_proj", "barrier 1", "conv + scan", "barrier 2",
		"B/C roll", "norm loads", "gated norm", "out_proj"}
	per := make([][]float64, len(names)+1)
	for it := 0; it < 30; it++ {
		if _, _, ok := gb.MambaBlock(h, h, lnw.g, nil, 1e-5, wi.g, wo.g, wg, conv, ssm, s, wi.g); !ok {
			t.Fatal("MambaBlock did not take the block")
		}
		raw := gb.ReadF32(st)
		ts := make([]uint64, len(raw)/2)
		for i := range ts {
			ts[i] = uint64(math.Float32bits(raw[2*i])) | uint64(math.Float32bits(raw[2*i+1]))<<32
		}
		first, last := uint64(math.MaxUint64), uint64(0)
		for k := range names {
			var sum float64
			for blk := 0; blk < gb.sms; blk++ {
				b := ts[blk*mbStamps:]
				sum += float64(b[k+1] - b[k])
				first, last = min(first, b[0]), max(last, b[len(names)])
			}
			per[k] = append(per[k], sum/float64(gb.sms)/1e3)
		}
		per[len(names)] = append(per[len(names)], float64(last-first)/1e3)
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	for k, n := range names {
		t.Logf("%-16s %7.2f µs (mean over blocks, median of 30)", n, med(per[k]))
	}
	t.Logf("%-16s %7.2f µs (first start to last end)", "kernel", med(per[len(names)]))
}
