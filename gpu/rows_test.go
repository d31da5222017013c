//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestRowKernelsMatchFlat: tc_reduce_rows and copy_rows4/2 (two-dimensional
// grids, no per-element 64-bit division) give the same bits as tc_reduce
// and copy_axis4/2 for split-K Linear, Conv1d with each epilogue,
// ConvTranspose1d, Slice and Concat, and are the kernels that ran.
func TestRowKernelsMatchFlat(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(29, 30))
	type cs = compute.Conv1dSpec
	defer func(r, c bool) { reduceRowsOff, copyRowsOff = r, c }(reduceRowsOff, copyRowsOff)
	run := func(flat bool, f func() []float32) ([]float32, map[string]int) {
		reduceRowsOff, copyRowsOff = flat, flat
		before := map[string]int{}
		for n, k := range gb.k {
			before[n] = k.launches
		}
		v := f()
		ran := map[string]int{}
		for n, k := range gb.k {
			if d := k.launches - before[n]; d > 0 {
				ran[n] = d
			}
		}
		return v, ran
	}
	check := func(name string, f func() []float32, rows, copies bool) {
		t.Helper()
		want, flatRan := run(true, f)
		got, rowsRan := run(false, f)
		checkVals(t, name, want, got, 0)
		if rows && (rowsRan["tc_reduce_rows"] == 0 || rowsRan["tc_reduce"] != 0 || flatRan["tc_reduce"] == 0) {
			t.Errorf("%s: reductions ran %v (rows) and %v (flat)", name, rowsRan, flatRan)
		}
		if copies && (rowsRan["copy_rows4"]+rowsRan["copy_rows2"] == 0 || rowsRan["copy_axis4"]+rowsRan["copy_axis2"] != 0) {
			t.Errorf("%s: copies ran %v", name, rowsRan)
		}
	}

	x := randF32(r, 1, 142, 2048)
	w := randW(t, r, compute.BF16, 0.02, 1024, 2048)
	b := randW(t, r, compute.F32, 0.05, 1024)
	check("Linear 142×2048 → 1024", func() []float32 { return gb.ReadF32(gb.Linear(x.g, w.g, b.g)) }, true, false)

	for _, c := range []struct {
		ch, k, t, off int
		spec          cs
	}{
		{768, 7, 160, 27, cs{Dilation: 9}},
		{192, 7, 2300, 9, cs{Dilation: 3}},
		{2 * convSplitPer, 1, 300, 0, cs{}}, // 1×1: two splits of convSplitPer
	} {
		x := randF32(r, 1, 1, c.ch, c.t)
		w := randW(t, r, compute.F32, 1/math.Sqrt(float64(c.ch*c.k)), c.ch, c.ch, c.k)
		bias := randW(t, r, compute.F32, 0.05, c.ch)
		alpha := randW(t, r, compute.F32, 1, c.ch)
		tout := c.t - (c.k-1)*max(1, c.spec.Dilation)
		res := randF32(r, 1, 1, c.ch, tout+c.off+2)
		name := fmt.Sprintf("C%d K%d T%d %+v", c.ch, c.k, c.t, c.spec)
		check(name+" Conv1d", func() []float32 { return gb.ReadF32(gb.Conv1d(x.g, w.g, bias.g, c.spec)) }, true, false)
		check(name+" Conv1dSnake", func() []float32 { return gb.ReadF32(gb.Conv1dSnake(x.g, w.g, bias.g, c.spec, alpha.g)) }, true, false)
		check(name+" Conv1dResidual", func() []float32 {
			return gb.ReadF32(gb.Conv1dResidual(x.g, w.g, bias.g, c.spec, res.g, c.off))
		}, true, false)
	}

	xt := randF32(r, 1, 1, 768, 40)
	wt := randW(t, r, compute.F32, 0.03, 768, 384, 16)
	bt := randW(t, r, compute.F32, 0.05, 384)
	check("ConvTranspose1d 768 → 384 stride 8", func() []float32 {
		return gb.ReadF32(gb.ConvTranspose1d(xt.g, wt.g, bt.g, cs{Stride: 8, Padding: 4}))
	}, true, false)

	a := randF32(r, 1, 2, 192, 300)
	c := randF32(r, 1, 2, 192, 57)
	check("Concat along time", func() []float32 { return gb.ReadF32(gb.Concat(2, a.g, c.g)) }, false, true)
	check("Slice along time", func() []float32 { return gb.ReadF32(gb.Slice(a.g, 2, 13, 250)) }, false, true)
	h := randW(t, r, compute.BF16, 1, 2, 192, 300)
	check("Slice of bf16", func() []float32 { return gb.ReadF32(gb.Slice(h.g, 1, 5, 100)) }, false, true)
}
