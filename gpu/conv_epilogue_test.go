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
// Snake and the residual add done by conv_tcq / tc_reduce_rows as
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
		if n := gb.k["snake"].launches - snakes; n != 0 {
			t.Errorf("%s: Conv1dSnake launched snake %d times", name, n)
		}
		checkVals(t, name+" Conv1dSnake", gb.ReadF32(gb.Snake(y, alpha.g)), fused, 0)

		adds := gb.k["add_f32"].launches
		fused = gb.ReadF32(gb.Conv1dResidual(x.g, w.g, bias.g, c.spec, res.g, c.off))
		if n := gb.k["add_f32"].launches - adds; n != 0 {
			t.Errorf("%s: Conv1dResidual launched add_f32 %d times", name, n)
		}
		want := gb.ReadF32(gb.Add(gb.Slice(res.g, 2, c.off, c.off+tout), y))
		checkVals(t, name+" Conv1dResidual", want, fused, 0)
	}
}
