//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// A batch's decode step must compute each utterance exactly as the lone
// step does (docs/design.md › "Continuous batching"): these tests check
// the row-invariance of each op a decode step runs on Hopper, bit for
// bit, at the real hybrid's shapes.

// sameBits fails t unless got holds exactly want's bits.
func sameBits(t *testing.T, name string, want, got []float32) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	diff, first := 0, -1
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			if first < 0 {
				first = i
			}
			diff++
		}
	}
	if diff > 0 {
		t.Errorf("%s: %d of %d values differ; the first, [%d], is %g, want %g", name, diff, len(want), first, got[first], want[first])
	}
}

// rowsOf is rows [lo, hi) of x [R, 1, K] on the GPU, as their own tensor.
func rowsOf(x compute.Tensor, lo, hi int) compute.Tensor {
	return gb.Slice(x, 0, lo, hi)
}

// TestChunkGemvRows: the chunk GEMV family (Linear and LinearSwiGLU) over
// a batch's rows [R, 1, K] gives each CFG pair the bits it gives that pair
// alone ([2, 1, K], the lone decode step), for every decode K, a ragged
// last block of weight rows, and odd R; and agrees with the CPU.
func TestChunkGemvRows(t *testing.T) {
	need(t)
	if !gb.chunkGemv {
		t.Skip("the chunk GEMV is the Hopper plan's")
	}
	r := rand.New(rand.NewPCG(71, 72))
	for _, k := range []int{2048, 4096, 8192} {
		const n = 520 // not a multiple of any block's rows
		w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(k)), n, k)
		wg := randW(t, r, compute.BF16, 1/math.Sqrt(float64(k)), 2*n, k)
		bias := randW(t, r, compute.F32, 0.1, n)
		for _, rows := range []int{4, 5, 12, 34} {
			x := randF32(r, 1, rows, 1, k)
			name := fmt.Sprintf("K %d, %d rows", k, rows)
			all := gb.ReadF32(gb.Linear(x.g, w.g, bias.g))
			check(t, name+" Linear", pair{cb.Linear(x.c, w.c, bias.c), gb.FromF32(all, rows, 1, n)}, tol)
			glu, ok := gb.LinearSwiGLU(x.g, wg.g, nil)
			if !ok {
				t.Fatalf("%s: LinearSwiGLU declined", name)
			}
			gluAll := gb.ReadF32(glu)
			check(t, name+" LinearSwiGLU", pair{cb.SwiGLU(cb.Linear(x.c, wg.c, nil)), gb.FromF32(gluAll, rows, 1, n)}, tol)
			for lo := 0; lo < rows; lo += 2 {
				hi := min(lo+2, rows)
				xp := rowsOf(x.g, lo, hi)
				sameBits(t, fmt.Sprintf("%s Linear rows %d–%d", name, lo, hi-1), gb.ReadF32(gb.Linear(xp, w.g, bias.g)), all[lo*n:hi*n])
				gp, _ := gb.LinearSwiGLU(xp, wg.g, nil)
				sameBits(t, fmt.Sprintf("%s LinearSwiGLU rows %d–%d", name, lo, hi-1), gb.ReadF32(gp), gluAll[lo*n:hi*n])
			}
		}
	}
}

// TestMamba2BlockRows: the fused Mamba2 mixer over a batch of three
// utterances (6 rows, each with its own states) gives every utterance the
// output and states the mixer gives it alone, bit for bit, over three
// steps.
func TestMamba2BlockRows(t *testing.T) {
	s := needRun(t)
	r := rand.New(rand.NewPCG(73, 74))
	const d, U = 2048, 3
	C := s.DInner + 2*s.DState
	E := 2*s.DInner + 2*s.DState + s.Heads
	_, w := mambaWeights(t, r, s, compute.BF16)
	wi := randW(t, r, compute.BF16, 1/math.Sqrt(d), E, d).g
	wo := randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g
	cv, sv := randVals(r, 2*U*C*s.DConv, 1), randVals(r, 2*U*s.Heads*s.HeadDim*s.DState, 0.5)
	convAll, ssmAll := gb.FromF32(cv, 2*U, C, s.DConv), gb.FromF32(sv, 2*U, s.Heads, s.HeadDim, s.DState)
	var convs, ssms [U]compute.Tensor
	for u := range U {
		cs, ss := 2*C*s.DConv, 2*s.Heads*s.HeadDim*s.DState
		convs[u] = gb.FromF32(cv[u*cs:(u+1)*cs], 2, C, s.DConv)
		ssms[u] = gb.FromF32(sv[u*ss:(u+1)*ss], 2, s.Heads, s.HeadDim, s.DState)
	}
	for step := range 3 {
		x := gb.FromF32(randVals(r, 2*U*d, 1), 2*U, 1, d)
		y, ok := gb.Mamba2Block(x, wi, wo, w, convAll, ssmAll, s)
		if !ok {
			t.Fatal("Mamba2Block declined a batch's rows")
		}
		all, convVals, ssmVals := gb.ReadF32(y), gb.ReadF32(convAll), gb.ReadF32(ssmAll)
		for u := range U {
			yu, ok := gb.Mamba2Block(rowsOf(x, 2*u, 2*u+2), wi, wo, w, convs[u], ssms[u], s)
			if !ok {
				t.Fatal("Mamba2Block declined an utterance's rows")
			}
			name := fmt.Sprintf("step %d utterance %d", step, u)
			sameBits(t, name+" output", gb.ReadF32(yu), all[2*u*d:(2*u+2)*d])
			cs, ss := 2*C*s.DConv, 2*s.Heads*s.HeadDim*s.DState
			sameBits(t, name+" conv state", gb.ReadF32(convs[u]), convVals[u*cs:(u+1)*cs])
			sameBits(t, name+" ssm state", gb.ReadF32(ssms[u]), ssmVals[u*ss:(u+1)*ss])
		}
	}
}
