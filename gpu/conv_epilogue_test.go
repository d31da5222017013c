//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestConvEpiloguesMatchUnfused: Conv1dSnake and Conv1dResidual (the
// Snake and the residual add done by conv_tc / conv_simt / tc_reduce as
// they store each output) give the same bits as Conv1d followed by Snake,
// or by Slice and Add, on the DAC residual units' shapes (split-K and
// not, windows with and without a residual offset), and run no snake or
// add kernel of their own.
func TestConvEpiloguesMatchUnfused(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(23, 24))
	type cs = compute.Conv1dSpec
	for _, c := range []struct {
		ch, k, t, off int
		spec          cs
	}{
		{1536, 7, 40, 3, cs{Dilation: 1}},  // block 1's first unit, streamed window (split-K)
		{768, 7, 160, 27, cs{Dilation: 9}}, // dilation 9
		{384, 1, 300, 0, cs{}},             // conv2 (kernel 1)
		{96, 7, 4096, 9, cs{Dilation: 3}},  // the 44.1 kHz stage
		{64, 7, 33, 0, cs{Padding: 3}},     // one-shot: padded, residual from column 0
	} {
		x := randF32(r, 1, 1, c.ch, c.t)
		w := randW(t, r, compute.F32, 1/math.Sqrt(float64(c.ch*c.k)), c.ch, c.ch, c.k)
		bias := randW(t, r, compute.F32, 0.05, c.ch)
		alpha := randW(t, r, compute.F32, 1, c.ch)
		y := gb.Conv1d(x.g, w.g, bias.g, c.spec)
		tout := cast(y).shape[2]
		res := randF32(r, 1, 1, c.ch, tout+c.off+2)
		name := fmt.Sprintf("C%d K%d T%d %+v", c.ch, c.k, c.t, c.spec)

		snakes := gb.k["snake"].launches
		fused := gb.ReadF32(gb.Conv1dSnake(x.g, w.g, bias.g, c.spec, alpha.g))
		if n := gb.k["snake"].launches - snakes; n != 0 && !convEpilogueOff {
			t.Errorf("%s: Conv1dSnake launched snake %d times", name, n)
		}
		checkVals(t, name+" Conv1dSnake", gb.ReadF32(gb.Snake(y, alpha.g)), fused, 0)

		adds := gb.k["add_f32"].launches
		fused = gb.ReadF32(gb.Conv1dResidual(x.g, w.g, bias.g, c.spec, res.g, c.off))
		if n := gb.k["add_f32"].launches - adds; n != 0 && !convEpilogueOff {
			t.Errorf("%s: Conv1dResidual launched add_f32 %d times", name, n)
		}
		want := gb.ReadF32(gb.Add(gb.Slice(res.g, 2, c.off, c.off+tout), y))
		checkVals(t, name+" Conv1dResidual", want, fused, 0)
	}
}

// TestConvSplitFixupMatchesReduce: with split-K, the convolutions' tiles
// reduced by their last split block (split_fixup) give the same bits as
// the partials reduced by tc_reduce after the kernel, for Conv1d (with and
// without an epilogue) and ConvTranspose1d on DAC shapes, and tc_reduce
// does not run.
func TestConvSplitFixupMatchesReduce(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(25, 26))
	type cs = compute.Conv1dSpec
	run := func(off bool, f func() compute.Tensor) ([]float32, int) {
		was := splitFixupOff
		splitFixupOff = off
		defer func() { splitFixupOff = was }()
		before := gb.k["tc_reduce"].launches
		v := gb.ReadF32(f())
		return v, gb.k["tc_reduce"].launches - before
	}
	for _, c := range []struct {
		cin, cout, k, t int
		spec            cs
		transposed      bool
	}{
		{1024, 1536, 7, 22, cs{}, false},            // decoder conv1, streamed
		{192, 192, 7, 4700, cs{Dilation: 3}, false}, // the 22 kHz stage
		{1536, 768, 16, 18, cs{Stride: 8}, true},    // block 1's upsampling
		{384, 192, 8, 1100, cs{Stride: 4}, true},    // block 3's upsampling
	} {
		x := randF32(r, 1, 1, c.cin, c.t)
		var w pair
		if c.transposed {
			w = randW(t, r, compute.F32, 1/math.Sqrt(float64(c.cin*c.k)), c.cin, c.cout, c.k)
		} else {
			w = randW(t, r, compute.F32, 1/math.Sqrt(float64(c.cin*c.k)), c.cout, c.cin, c.k)
		}
		bias := randW(t, r, compute.F32, 0.05, c.cout)
		alpha := randW(t, r, compute.F32, 1, c.cout)
		name := fmt.Sprintf("%d→%d K%d T%d %+v transposed %v", c.cin, c.cout, c.k, c.t, c.spec, c.transposed)
		ops := map[string]func() compute.Tensor{"plain": func() compute.Tensor {
			if c.transposed {
				return gb.ConvTranspose1d(x.g, w.g, bias.g, c.spec)
			}
			return gb.Conv1d(x.g, w.g, bias.g, c.spec)
		}}
		if !c.transposed {
			ops["snake epilogue"] = func() compute.Tensor { return gb.Conv1dSnake(x.g, w.g, bias.g, c.spec, alpha.g) }
		}
		for op, f := range ops {
			want, _ := run(true, f)
			got, reduces := run(false, f)
			checkVals(t, name+" "+op, want, got, 0)
			if reduces != 0 {
				t.Errorf("%s %s: tc_reduce ran %d times with the fixup", name, op, reduces)
			}
		}
	}
}
