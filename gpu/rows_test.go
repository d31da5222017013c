//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// launchesOf counts the launches of each kernel f makes.
func launchesOf(f func()) map[string]int {
	before := map[string]int{}
	for n, k := range gb.k {
		before[n] = k.launches
	}
	f()
	ran := map[string]int{}
	for n, k := range gb.k {
		if d := k.launches - before[n]; d > 0 {
			ran[n] = d
		}
	}
	return ran
}

// TestReduceRowsMatchFlat: tc_reduce_rows (a two-dimensional grid, no
// per-element 64-bit division), which sums the split-K partials, gives
// the same bits as tc_reduce, which the backend runs where the rows
// exceed a grid's 65535, for every mode and epilogue: both launched on
// the same random partials. And the split products (Linear, Conv1d with
// each epilogue, ConvTranspose1d) run tc_reduce_rows.
func TestReduceRowsMatchFlat(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(29, 30))
	for _, c := range []struct {
		name              string
		mode              int
		batch, cout, cols int // out [batch·cout, cols] (a Linear's [m, n]: batch·cout = m)
		splits            int
		snake, res        bool
	}{
		{"Linear", tcLinear, 1, 142, 1024, 4, false, false},
		{"Conv1d", tcConvMode, 2, 768, 160, 3, false, false},
		{"Conv1dSnake", tcConvMode, 1, 768, 160, 3, true, false},
		{"Conv1dResidual", tcConvMode, 2, 96, 301, 2, false, true},
		{"Conv1dSnake and residual", tcConvMode, 1, 192, 77, 16, true, true},
		{"ConvTranspose1d", tcConvT, 1, 384, 320, 5, false, false},
	} {
		rows, total := c.batch*c.cout, c.batch*c.cout*c.cols
		work := cast(gb.FromF32(randVals(r, c.splits*total, 1), c.splits*total))
		nb := c.cout
		if c.mode == tcLinear {
			nb = c.cols
		}
		bias := cast(gb.FromF32(randVals(r, nb, 0.1), nb))
		var e convEpilogue
		if c.snake {
			a := randVals(r, c.cout, 1)
			for i := range a {
				a[i] = 0.25 + float32(math.Abs(float64(a[i])))
			}
			e.alpha = cast(gb.FromF32(a, c.cout))
		}
		if c.res {
			e.res, e.resOff = cast(gb.FromF32(randVals(r, c.batch*c.cout*(c.cols+9), 1), c.batch, c.cout, c.cols+9)), 7
		}
		var rowsOut, flatOut *tensor
		gb.do(func() {
			rowsOut, flatOut = gb.newTensor(compute.F32, total), gb.newTensor(compute.F32, total)
			gb.launch(gb.k["tc_reduce_rows"], [3]int{(c.cols + 255) / 256, rows, 1}, block256,
				append([]any{work.ptr(), bias.ptr(), rowsOut.ptr(), total, c.splits, c.mode, c.cols, c.cout}, e.args()...)...)
			gb.launch(gb.k["tc_reduce"], grid1(total), block256,
				append([]any{work.ptr(), bias.ptr(), flatOut.ptr(), total, c.splits, c.mode, c.cols, c.cout, c.cols}, e.args()...)...)
		})
		checkVals(t, c.name+": tc_reduce_rows against tc_reduce", gb.ReadF32(flatOut), gb.ReadF32(rowsOut), 0)
	}

	ranRows := func(name string, f func() compute.Tensor) {
		t.Helper()
		var y compute.Tensor
		ran := launchesOf(func() { y = f() })
		gb.ReadF32(y)
		if ran["tc_reduce_rows"] == 0 || ran["tc_reduce"] != 0 {
			t.Errorf("%s: reductions ran %v", name, ran)
		}
	}
	type cs = compute.Conv1dSpec
	x := randF32(r, 1, 142, 2048)
	w := randW(t, r, compute.BF16, 0.02, 1024, 2048)
	b := randW(t, r, compute.F32, 0.05, 1024)
	ranRows("Linear 142×2048 → 1024", func() compute.Tensor { return gb.Linear(x.g, w.g, b.g) })
	xc := randF32(r, 1, 1, 768, 40)
	wc := randW(t, r, compute.F32, 0.01, 768, 768, 7)
	alpha := randW(t, r, compute.F32, 1, 768)
	res := randF32(r, 1, 1, 768, 40)
	ranRows("Conv1d 768 → 768", func() compute.Tensor { return gb.Conv1d(xc.g, wc.g, nil, cs{Padding: 3}) })
	ranRows("Conv1dSnake 768 → 768", func() compute.Tensor { return gb.Conv1dSnake(xc.g, wc.g, nil, cs{Padding: 3}, alpha.g) })
	ranRows("Conv1dResidual 768 → 768", func() compute.Tensor { return gb.Conv1dResidual(xc.g, wc.g, nil, cs{Padding: 3}, res.g, 0) })
	wt := randW(t, r, compute.F32, 0.03, 768, 384, 16)
	ranRows("ConvTranspose1d 768 → 384 stride 8", func() compute.Tensor {
		return gb.ConvTranspose1d(xc.g, wt.g, nil, cs{Stride: 8, Padding: 4})
	})
}

// TestCopyRowsMatchFlat: copy_rows4 and copy_rows2 (a two-dimensional
// grid), which Slice, Concat and CopyInto run, give the same bits as
// copy_axis4 and copy_axis2 launched on the same operands; and a Slice of
// more than 65535 outer rows runs copy_axis and equals the CPU's.
func TestCopyRowsMatchFlat(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct {
		shape            []int
		axis, start, end int
		dt               compute.DType
	}{
		{[]int{2, 192, 300}, 2, 13, 250, compute.F32},
		{[]int{2, 192, 300}, 1, 5, 100, compute.F32},
		{[]int{2, 192, 300}, 1, 5, 100, compute.BF16},
		{[]int{3, 7}, 1, 2, 7, compute.BF16},
	} {
		src := cast(randW(t, r, c.dt, 1, c.shape...).g)
		name := fmt.Sprintf("Slice %v %v axis %d [%d, %d)", c.dt, c.shape, c.axis, c.start, c.end)
		var got compute.Tensor
		ran := launchesOf(func() { got = gb.Slice(src, c.axis, c.start, c.end) })
		if ran["copy_rows4"]+ran["copy_rows2"] == 0 || ran["copy_axis4"]+ran["copy_axis2"] != 0 {
			t.Errorf("%s: copies ran %v", name, ran)
		}
		outer, dim, inner := axisGeometry(c.shape, c.axis)
		n := c.end - c.start
		var flat *tensor
		gb.do(func() {
			flat = gb.newTensor(c.dt, cast(got).shape...)
			k := gb.k["copy_axis4"]
			if c.dt != compute.F32 {
				k = gb.k["copy_axis2"]
			}
			total := outer * n * inner
			gb.launch(k, grid1(total), block256, src.ptr(), flat.ptr(), total, n*inner, inner, dim, c.start, n, 0)
		})
		checkVals(t, name+": copy_rows against copy_axis", gb.ReadF32(flat), gb.ReadF32(got), 0)
	}

	x := randF32(r, 1, 70000, 3, 2)
	var got compute.Tensor
	ran := launchesOf(func() { got = gb.Slice(x.g, 1, 1, 3) })
	if ran["copy_axis4"] == 0 || ran["copy_rows4"] != 0 {
		t.Errorf("Slice of 70000 outer rows: copies ran %v", ran)
	}
	checkVals(t, "Slice [70000 3 2] axis 1 [1, 3)", cb.ReadF32(cb.Slice(x.c, 1, 1, 3)), gb.ReadF32(got), 0)
}
