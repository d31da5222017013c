//go:build cuda

package gpu

import (
	"fmt"
	"slices"
	"syscall"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// nullPtr is a null device pointer for optional kernel arguments.
const nullPtr = cu.DevicePtr(0)

var axisGeometry = compute.AxisGeometry

func (b *Backend) Reshape(t compute.Tensor, shape ...int) compute.Tensor {
	ct := cast(t)
	if compute.NumElements(shape) != ct.n() {
		panic(fmt.Sprintf("gpu.Reshape: %v to %v", ct.shape, shape))
	}
	ct.ptr() // not freed
	r := b.wrap(ct.h.st, ct.dt, shape, syscall.Gettid() == b.ownerTID)
	r.f32 = ct.f32
	return r
}

// Rows views t's first n rows in place (compute.RowViewer): a tensor on
// the same storage with a shorter axis 0.
func (b *Backend) Rows(t compute.Tensor, n int) compute.Tensor {
	ct := cast(t)
	if len(ct.shape) == 0 || n < 0 || n > ct.shape[0] {
		panic(fmt.Sprintf("gpu.Rows: %d rows of %v", n, ct.shape))
	}
	ct.ptr() // not freed
	return b.wrap(ct.h.st, ct.dt, append([]int{n}, ct.shape[1:]...), syscall.Gettid() == b.ownerTID)
}

// copyAxis copies src viewed as [outer, sDim, inner] rows [sOff, sOff+n)
// into dst viewed as [outer, dDim, inner] at dOff (owner goroutine).
func (b *Backend) copyAxis(src, dst *tensor, outer, n, inner, sDim, sOff, dDim, dOff int) {
	total := outer * n * inner
	if total == 0 {
		return
	}
	wide := src.dt.Size() == 4
	if outer < 1<<16 && n*inner < 1<<31 {
		k := b.k["copy_rows4"]
		if !wide {
			k = b.k["copy_rows2"]
		}
		gx := min((n*inner+255)/256, max(1, 4096/outer))
		b.launch(k, [3]int{gx, outer, 1}, block256, src.ptr(), dst.ptr(), n*inner, inner, sDim, sOff, dDim, dOff)
		return
	}
	k := b.k["copy_axis4"]
	if !wide {
		k = b.k["copy_axis2"]
	}
	b.launch(k, grid1(total), block256, src.ptr(), dst.ptr(), total, n*inner, inner, sDim, sOff, dDim, dOff)
}

func (b *Backend) Slice(t compute.Tensor, axis, start, end int) compute.Tensor {
	ct := cast(t)
	if axis < 0 || axis >= len(ct.shape) || start < 0 || end > ct.shape[axis] || start > end {
		panic(fmt.Sprintf("gpu.Slice: axis %d [%d,%d) of %v", axis, start, end, ct.shape))
	}
	outer, dim, inner := axisGeometry(ct.shape, axis)
	shape := slices.Clone(ct.shape)
	shape[axis] = end - start
	var out *tensor
	b.do(func() {
		out = b.newTensor(ct.dt, shape...)
		b.copyAxis(ct, out, outer, end-start, inner, dim, start, end-start, 0)
	})
	if h := ct.h.st.host; h != nil {
		hs := make([]int32, 0, outer*(end-start)*inner)
		for o := 0; o < outer; o++ {
			hs = append(hs, h[(o*dim+start)*inner:(o*dim+end)*inner]...)
		}
		out.h.st.host = hs
	}
	return out
}

func (b *Backend) Concat(axis int, ts ...compute.Tensor) compute.Tensor {
	if len(ts) == 0 {
		panic("gpu.Concat: no tensors")
	}
	first := cast(ts[0])
	shape := slices.Clone(first.shape)
	total := 0
	for _, t := range ts {
		ct := cast(t)
		if len(ct.shape) != len(shape) || ct.dt != compute.F32 {
			panic(fmt.Sprintf("gpu.Concat: %v %v with %v", ct.shape, ct.dt, shape))
		}
		for i := range shape {
			if i != axis && ct.shape[i] != shape[i] {
				panic(fmt.Sprintf("gpu.Concat: axis %d: %v with %v", axis, ct.shape, shape))
			}
		}
		total += ct.shape[axis]
	}
	shape[axis] = total
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		off := 0
		for _, t := range ts {
			ct := cast(t)
			outer, d, inner := axisGeometry(ct.shape, axis)
			b.copyAxis(ct, out, outer, d, inner, d, 0, total, off)
			off += d
		}
	})
	return out
}

func (b *Backend) CopyInto(dst compute.Tensor, axis, offset int, src compute.Tensor) {
	d, s := cast(dst), cast(src)
	if d.dt != compute.F32 || s.dt != compute.F32 || len(d.shape) != len(s.shape) || axis < 0 || axis >= len(d.shape) {
		panic(fmt.Sprintf("gpu.CopyInto: %v %v into %v %v", s.shape, s.dt, d.shape, d.dt))
	}
	for i := range d.shape {
		if i != axis && d.shape[i] != s.shape[i] {
			panic(fmt.Sprintf("gpu.CopyInto: %v into %v on axis %d", s.shape, d.shape, axis))
		}
	}
	if offset < 0 || offset+s.shape[axis] > d.shape[axis] {
		panic(fmt.Sprintf("gpu.CopyInto: offset %d + %d past %d", offset, s.shape[axis], d.shape[axis]))
	}
	outer, dd, inner := axisGeometry(d.shape, axis)
	sd := s.shape[axis]
	b.do(func() { b.copyAxis(s, d, outer, sd, inner, sd, 0, dd, offset) })
}

func (b *Backend) Window(prev compute.Tensor, lead int, x compute.Tensor, trail, keep int) (w, tail compute.Tensor) {
	w, _, tail = b.window(prev, lead, x, trail, keep, nil)
	return w, tail
}

var _ compute.SnakeWindows = (*Backend)(nil)

func (b *Backend) WindowSnake(prev compute.Tensor, lead int, x compute.Tensor, trail, keep int, alpha compute.Tensor) (w, h, tail compute.Tensor) {
	return b.window(prev, lead, x, trail, keep, alpha)
}

// window is Window on window_cols, and with alpha WindowSnake.
func (b *Backend) window(prev compute.Tensor, lead int, x compute.Tensor, trail, keep int, alpha compute.Tensor) (w, h, tail compute.Tensor) {
	rows, np, nx := compute.WindowGeometry("gpu", prev, lead, x, trail, keep)
	pp, xp := nullPtr, nullPtr
	if prev != nil {
		lead, pp = np, cast(prev).ptr()
	}
	ref := prev
	if x != nil {
		ref, xp = x, cast(x).ptr()
	}
	shape := slices.Clone(ref.Shape())
	C, n := shape[1], lead+nx+trail
	if C >= 1<<16 {
		panic(fmt.Sprintf("gpu.Window: %d channels past the grid's 65535 rows", C))
	}
	ap := nullPtr
	var at *tensor
	if alpha != nil {
		if at = cast(alpha); at.n() != C {
			panic(fmt.Sprintf("gpu.WindowSnake: alpha of %d for %d channels", at.n(), C))
		}
	}
	var wt, ht, tt *tensor
	b.do(func() {
		shape[2] = n
		wt = b.newTensor(compute.F32, shape...)
		hp := nullPtr
		if at != nil {
			ht = b.newTensor(compute.F32, shape...)
			ap, hp = b.asF32(at).ptr(), ht.ptr()
		}
		tp := nullPtr
		if keep > 0 {
			shape[2] = keep
			tt = b.newTensor(compute.F32, shape...)
			tp = tt.ptr()
		}
		if n == 0 {
			return
		}
		// A row's columns over a few blocks (copyAxis' grid): at most 4096
		// blocks in all. The grid holds 65535 rows: a taller window (many
		// streams stacked, dac.PushMany) goes in launches of whole batch
		// rows, so that row o's channel stays o mod C.
		per := rows
		if per >= 1<<16 {
			per = (1<<16 - 1) / C * C
		}
		for r := 0; r < rows; r += per {
			m := min(per, rows-r)
			gx := min((n+255)/256, max(1, 4096/m))
			b.launch(b.k["window_cols"], [3]int{gx, m, 1}, block256, rowPtr(pp, r*lead), lead, rowPtr(xp, r*nx), nx, trail,
				rowPtr(wt.ptr(), r*n), rowPtr(tp, r*keep), keep, ap, rowPtr(hp, r*n), C)
		}
	})
	w = wt
	if ht != nil {
		h = ht
	}
	if tt != nil {
		tail = tt
	}
	return w, h, tail
}

// rowPtr is p advanced by off float32 values (null stays null).
func rowPtr(p cu.DevicePtr, off int) cu.DevicePtr {
	if p == nullPtr {
		return p
	}
	return p + cu.DevicePtr(4*off)
}

// gemvMaxRows is the most rows linear_gemv takes (GEMV_MAX_M in
// kernels/core.cu: one weight pass for all rows).
const gemvMaxRows = 8

// Linear is x·wᵀ + bias on the kernel for its rows and weight: on Hopper
// the chunk GEMV for a decode step's rows, one utterance's or a batch's,
// with a BF16 weight and the decode step's K (stepRows, gemv.go), and
// gemv_tc for 3 to 32 other rows (a short prefill); the weight-read GEMVs
// for up to 8 rows of a BF16 weight; linear_gemv for up to 8 rows of any
// other weight; the tiled GEMMs (tcGemm) for more rows.
func (b *Backend) Linear(x, w, bias compute.Tensor) compute.Tensor {
	xt, wt := f32Of(x, "Linear"), cast(w)
	if len(wt.shape) != 2 || wt.dt == compute.I32 {
		panic(fmt.Sprintf("gpu.Linear: weight %v %v", wt.shape, wt.dt))
	}
	n, k := wt.shape[0], wt.shape[1]
	if len(xt.shape) == 0 || xt.shape[len(xt.shape)-1] != k {
		panic(fmt.Sprintf("gpu.Linear: x %v with weight %v", xt.shape, wt.shape))
	}
	m := xt.n() / max(k, 1)
	var bt *tensor
	if bias != nil {
		bt = cast(bias)
		if bt.n() != n {
			panic(fmt.Sprintf("gpu.Linear: bias of %d for %d outputs", bt.n(), n))
		}
	}
	shape := append(slices.Clone(xt.shape[:len(xt.shape)-1]), n)
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		if m == 0 || n == 0 {
			return
		}
		bp := nullPtr
		if bt != nil {
			bp = b.asF32(bt).ptr()
		}
		if wt.dt == compute.BF16 && b.useGemvChunk(k) && stepRows(xt, m) {
			b.gemvChunk(xt, wt, bp, out.ptr(), m, n, k)
		} else if b.useGemvTC(m, k, wt) {
			b.gemvTC(xt, wt, bp, out.ptr(), m, n, k)
		} else if useGemvM2(m, k, wt) {
			b.gemvRows(xt, wt, bp, out.ptr(), m, n, k)
		} else if m <= gemvMaxRows {
			b.launch(b.k["linear_gemv"], [3]int{(n + 7) / 8, 1, 1}, block256,
				xt.ptr(), wt.ptr(), bp, out.ptr(), m, n, k, int(wt.dt))
		} else {
			b.tcGemm(tcLinear, xt, wt, bp, out, m, n, k, tcShape{})
		}
	})
	return out
}

func (b *Backend) Embedding(table, ids compute.Tensor) compute.Tensor {
	tt, it := cast(table), cast(ids)
	if it.dt != compute.I32 || len(tt.shape) != 2 || tt.dt == compute.I32 {
		panic(fmt.Sprintf("gpu.Embedding: table %v %v ids %v", tt.shape, tt.dt, it.dt))
	}
	v, d := tt.shape[0], tt.shape[1]
	checkIDs("Embedding", it, v)
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, append(slices.Clone(it.shape), d)...)
		if n := out.n(); n > 0 {
			b.launch(b.k["embedding"], grid1(n), block256, tt.ptr(), it.ptr(), out.ptr(), n, d, int(tt.dt))
		}
	})
	return out
}

// checkIDs panics when ids whose host copy is known hold a row outside
// [0, v) (ids produced on the device, such as sampled codes, are not
// checked).
func checkIDs(op string, ids *tensor, v int) {
	for _, id := range ids.h.st.host {
		if id < 0 || int(id) >= v {
			panic(fmt.Sprintf("gpu.%s: id %d outside [0, %d)", op, id, v))
		}
	}
}

var _ compute.EmbeddingSummer = (*Backend)(nil)

// EmbeddingSum is compute.EmbeddingSummer: one kernel for the K lookups,
// their sum and its copies.
func (b *Backend) EmbeddingSum(tables []compute.Tensor, ids compute.Tensor, rows int) compute.Tensor {
	it := cast(ids)
	K := len(tables)
	if K < 1 || K > 9 || it.dt != compute.I32 || len(it.shape) != 2 || it.shape[0] != K || rows < 1 {
		panic(fmt.Sprintf("gpu.EmbeddingSum: %d tables, ids %v %v, %d rows", K, it.dt, it.shape, rows))
	}
	T := it.shape[1]
	var ptrs [9]cu.DevicePtr
	t0 := cast(tables[0])
	if len(t0.shape) != 2 || t0.dt == compute.I32 {
		panic(fmt.Sprintf("gpu.EmbeddingSum: table %v %v", t0.shape, t0.dt))
	}
	v, d := t0.shape[0], t0.shape[1]
	for k, tab := range tables {
		tt := cast(tab)
		if tt.dt != t0.dt || !slices.Equal(tt.shape, t0.shape) {
			panic(fmt.Sprintf("gpu.EmbeddingSum: table %d is %v %v, table 0 %v %v", k, tt.shape, tt.dt, t0.shape, t0.dt))
		}
		ptrs[k] = tt.ptr()
	}
	checkIDs("EmbeddingSum", it, v)
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, rows, T, d)
		if n := T * d; n > 0 {
			b.launch(b.k["embedding_sum"], grid1(n), block256, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5],
				ptrs[6], ptrs[7], ptrs[8], it.ptr(), out.ptr(), K, T, d, int(t0.dt), rows)
		}
	})
	return out
}

// unary launches an elementwise kernel kernel(x, out, extra…, n).
func (b *Backend) elementwise(op string, x *tensor, shape []int, args func(out *tensor) []any) *tensor {
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		if out.n() == 0 {
			return
		}
		b.launch(b.k[op], grid1(out.n()), block256, args(out)...)
	})
	return out
}

func (b *Backend) Add(x, y compute.Tensor) compute.Tensor {
	xt, yt := f32Of(x, "Add"), f32Of(y, "Add")
	if !slices.Equal(xt.shape, yt.shape) {
		panic(fmt.Sprintf("gpu.Add: %v + %v", xt.shape, yt.shape))
	}
	return b.elementwise("add_f32", xt, xt.shape, func(o *tensor) []any { return []any{xt.ptr(), yt.ptr(), o.ptr(), o.n()} })
}

func (b *Backend) Scale(x compute.Tensor, s float32) compute.Tensor {
	xt := f32Of(x, "Scale")
	return b.elementwise("scale_f32", xt, xt.shape, func(o *tensor) []any { return []any{xt.ptr(), o.ptr(), s, o.n()} })
}

func (b *Backend) Tanh(x compute.Tensor) compute.Tensor {
	xt := f32Of(x, "Tanh")
	return b.elementwise("tanh_f32", xt, xt.shape, func(o *tensor) []any { return []any{xt.ptr(), o.ptr(), o.n()} })
}

func (b *Backend) CosSin(x compute.Tensor) compute.Tensor {
	xt := f32Of(x, "CosSin")
	if len(xt.shape) == 0 {
		panic("gpu.CosSin: scalar input")
	}
	n := xt.shape[len(xt.shape)-1]
	shape := slices.Clone(xt.shape)
	shape[len(shape)-1] = 2 * n
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		if total := xt.n(); total > 0 {
			b.launch(b.k["cossin"], grid1(total), block256, xt.ptr(), out.ptr(), total, n)
		}
	})
	return out
}

func (b *Backend) SwiGLU(x compute.Tensor) compute.Tensor {
	xt := f32Of(x, "SwiGLU")
	d2 := xt.shape[len(xt.shape)-1]
	if d2%2 != 0 {
		panic(fmt.Sprintf("gpu.SwiGLU: odd last axis %v", xt.shape))
	}
	shape := slices.Clone(xt.shape)
	shape[len(shape)-1] = d2 / 2
	return b.elementwise("swiglu", xt, shape, func(o *tensor) []any { return []any{xt.ptr(), o.ptr(), o.n(), d2 / 2} })
}

// layerNorm launches one block per row (owner goroutine).
func (b *Backend) layerNorm(x, res, w, bias, out, sum *tensor, eps float32) {
	d := x.shape[len(x.shape)-1]
	rows := x.n() / max(d, 1)
	if rows == 0 || d == 0 {
		return
	}
	if w.n() != d || (bias != nil && bias.n() != d) {
		panic(fmt.Sprintf("gpu.LayerNorm: weight %v bias for rows of %d", w.shape, d))
	}
	rp, bp, sp := nullPtr, nullPtr, nullPtr
	if res != nil {
		rp = res.ptr()
	}
	if bias != nil {
		bp = b.asF32(bias).ptr()
	}
	if sum != nil {
		sp = sum.ptr()
	}
	if th, ok := rowThreads(d, 8); ok {
		b.launch(b.k["layernorm_v8"], [3]int{rows, 1, 1}, [3]int{th, 1, 1}, x.ptr(), rp, b.asF32(w).ptr(), bp, out.ptr(), sp, d/8, eps)
		return
	}
	b.launch(b.k["layernorm"], [3]int{rows, 1, 1}, block256, x.ptr(), rp, b.asF32(w).ptr(), bp, out.ptr(), sp, d, eps)
}

// rowThreads is the block size of a register-resident row kernel whose
// threads each hold up to 16 floats of a row of d, in chunks of width
// floats (layernorm_v8: 8, two chunks; mamba_norm_v4: 4, four), and
// whether it applies (d a multiple of width, at most 16384).
func rowThreads(d, width int) (int, bool) {
	if d%width != 0 || d == 0 || d > 16*1024 {
		return 0, false
	}
	chunks := d / width
	th := min(1024, (chunks+31)/32*32)
	for chunks > 16/width*th {
		th += 32
	}
	return th, true
}

func (b *Backend) LayerNorm(x, w, bias compute.Tensor, eps float32) compute.Tensor {
	xt := f32Of(x, "LayerNorm")
	var bt *tensor
	if bias != nil {
		bt = cast(bias)
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, xt.shape...)
		b.layerNorm(xt, nil, cast(w), bt, out, nil, eps)
	})
	return out
}

func (b *Backend) AddLayerNorm(x, residual, w, bias compute.Tensor, eps float32) (compute.Tensor, compute.Tensor) {
	xt := f32Of(x, "AddLayerNorm")
	var bt *tensor
	if bias != nil {
		bt = cast(bias)
	}
	if residual == nil {
		return b.LayerNorm(x, w, bias, eps), b.Reshape(x, xt.shape...)
	}
	rt := f32Of(residual, "AddLayerNorm")
	if !slices.Equal(xt.shape, rt.shape) {
		panic(fmt.Sprintf("gpu.AddLayerNorm: %v + %v", xt.shape, rt.shape))
	}
	var out, sum *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, xt.shape...)
		sum = b.newTensor(compute.F32, xt.shape...)
		b.layerNorm(xt, rt, cast(w), bt, out, sum, eps)
	})
	return out, sum
}
