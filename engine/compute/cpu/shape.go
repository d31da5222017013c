package cpu

import (
	"fmt"
	"sync"

	"zonostream/engine/compute"
)

// parallelFor splits [0, n) into contiguous chunks run on the backend's
// workers; small n runs inline.
func (b *Backend) parallelFor(n int, fn func(lo, hi int)) {
	w := b.workers
	if w > n {
		w = n
	}
	if w <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}

// axisGeometry views a shape as [outer, dim, inner] around axis.
var axisGeometry = compute.AxisGeometry

func (b *Backend) Reshape(t compute.Tensor, shape ...int) compute.Tensor {
	ct := cast(t)
	if compute.NumElements(shape) != compute.NumElements(ct.shape) {
		panic(fmt.Sprintf("cpu.Reshape: %v to %v", ct.shape, shape))
	}
	return &tensor{shape: append([]int(nil), shape...), dt: ct.dt, f32: ct.f32, u16: ct.u16, i32: ct.i32}
}

// Rows views t's first n rows in place (compute.RowViewer).
func (b *Backend) Rows(t compute.Tensor, n int) compute.Tensor {
	ct := cast(t)
	if len(ct.shape) == 0 || n < 0 || n > ct.shape[0] {
		panic(fmt.Sprintf("cpu.Rows: %d rows of %v", n, ct.shape))
	}
	shape := append([]int{n}, ct.shape[1:]...)
	m := compute.NumElements(shape)
	v := &tensor{shape: shape, dt: ct.dt}
	switch {
	case ct.f32 != nil:
		v.f32 = ct.f32[:m:m]
	case ct.u16 != nil:
		v.u16 = ct.u16[:m:m]
	case ct.i32 != nil:
		v.i32 = ct.i32[:m:m]
	}
	return v
}

func (b *Backend) Slice(t compute.Tensor, axis, start, end int) compute.Tensor {
	ct := cast(t)
	if axis < 0 || axis >= len(ct.shape) || start < 0 || end > ct.shape[axis] || start > end {
		panic(fmt.Sprintf("cpu.Slice: axis %d [%d,%d) of %v", axis, start, end, ct.shape))
	}
	outer, dim, inner := axisGeometry(ct.shape, axis)
	shape := append([]int(nil), ct.shape...)
	shape[axis] = end - start
	out := &tensor{shape: shape, dt: ct.dt}
	n := end - start
	switch ct.dt {
	case compute.F32:
		out.f32 = make([]float32, outer*n*inner)
		for o := 0; o < outer; o++ {
			copy(out.f32[o*n*inner:(o+1)*n*inner], ct.f32[(o*dim+start)*inner:(o*dim+end)*inner])
		}
	case compute.I32:
		out.i32 = make([]int32, outer*n*inner)
		for o := 0; o < outer; o++ {
			copy(out.i32[o*n*inner:(o+1)*n*inner], ct.i32[(o*dim+start)*inner:(o*dim+end)*inner])
		}
	default:
		out.u16 = make([]uint16, outer*n*inner)
		for o := 0; o < outer; o++ {
			copy(out.u16[o*n*inner:(o+1)*n*inner], ct.u16[(o*dim+start)*inner:(o*dim+end)*inner])
		}
	}
	return out
}

func (b *Backend) Concat(axis int, ts ...compute.Tensor) compute.Tensor {
	if len(ts) == 0 {
		panic("cpu.Concat: no tensors")
	}
	first := cast(ts[0])
	shape := append([]int(nil), first.shape...)
	total := 0
	for _, t := range ts {
		ct := cast(t)
		if len(ct.shape) != len(shape) || ct.dt != compute.F32 {
			panic(fmt.Sprintf("cpu.Concat: %v %v with %v", ct.shape, ct.dt, shape))
		}
		for i := range shape {
			if i != axis && ct.shape[i] != shape[i] {
				panic(fmt.Sprintf("cpu.Concat: axis %d: %v with %v", axis, ct.shape, shape))
			}
		}
		total += ct.shape[axis]
	}
	shape[axis] = total
	out := newF32(shape...)
	off := 0
	for _, t := range ts {
		b.CopyInto(out, axis, off, t)
		off += cast(t).shape[axis]
	}
	return out
}

func (b *Backend) CopyInto(dst compute.Tensor, axis, offset int, src compute.Tensor) {
	d, s := cast(dst), cast(src)
	if d.dt != compute.F32 || s.dt != compute.F32 || len(d.shape) != len(s.shape) {
		panic(fmt.Sprintf("cpu.CopyInto: %v %v into %v %v", s.shape, s.dt, d.shape, d.dt))
	}
	for i := range d.shape {
		if i != axis && d.shape[i] != s.shape[i] {
			panic(fmt.Sprintf("cpu.CopyInto: %v into %v on axis %d", s.shape, d.shape, axis))
		}
	}
	if offset < 0 || offset+s.shape[axis] > d.shape[axis] {
		panic(fmt.Sprintf("cpu.CopyInto: offset %d + %d past %d", offset, s.shape[axis], d.shape[axis]))
	}
	outer, dd, inner := axisGeometry(d.shape, axis)
	sd := s.shape[axis]
	for o := 0; o < outer; o++ {
		copy(d.f32[(o*dd+offset)*inner:(o*dd+offset+sd)*inner], s.f32[o*sd*inner:(o+1)*sd*inner])
	}
}

func (b *Backend) Window(prev compute.Tensor, lead int, x compute.Tensor, trail, keep int) (w, tail compute.Tensor) {
	rows, np, nx := compute.WindowGeometry("cpu", prev, lead, x, trail, keep)
	if prev != nil {
		lead = np
	}
	n := lead + nx + trail
	shape := append([]int(nil), windowRef(prev, x).Shape()...)
	shape[2] = n
	wt := newF32(shape...)
	for r := 0; r < rows; r++ {
		row := wt.f32[r*n : (r+1)*n]
		if prev != nil {
			copy(row, cast(prev).f32[r*np:(r+1)*np])
		}
		if x != nil {
			copy(row[lead:], cast(x).f32[r*nx:(r+1)*nx])
		}
	}
	if keep == 0 {
		return wt, nil
	}
	return wt, b.Slice(wt, 2, n-keep, n)
}

// windowRef is the tensor whose shape a window copies (x, or prev when x
// is nil).
func windowRef(prev, x compute.Tensor) compute.Tensor {
	if x != nil {
		return x
	}
	return prev
}
