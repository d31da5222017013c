// Package cpu is the pure-Go compute.Backend: the reference every other
// backend is checked against, what CI runs, and the fallback on machines
// without an NVIDIA GPU. Weights stay in their stored dtype (BF16/F16/F32);
// every op computes in float32 and spreads its work over all cores.
package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"

	"zonostream/engine/compute"
)

// tensor is the CPU tensor: exactly one of f32, u16 (BF16/F16 bits) or i32
// holds the data.
type tensor struct {
	shape []int
	dt    compute.DType
	f32   []float32
	u16   []uint16
	i32   []int32
}

func (t *tensor) Shape() []int         { return t.shape }
func (t *tensor) DType() compute.DType { return t.dt }

// Backend implements compute.Backend on the host.
type Backend struct {
	workers int
}

var (
	_ compute.Backend   = (*Backend)(nil)
	_ compute.RowViewer = (*Backend)(nil)
)

// New returns a CPU backend using workers goroutines (0: all cores).
func New(workers int) *Backend {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Backend{workers: workers}
}

func (b *Backend) Name() string { return "cpu" }
func (b *Backend) Device() string {
	return fmt.Sprintf("CPU (%d threads, %s/%s)", b.workers, runtime.GOOS, runtime.GOARCH)
}
func (b *Backend) Close() error { return nil }

func cast(t compute.Tensor) *tensor {
	ct, ok := t.(*tensor)
	if !ok {
		panic(fmt.Sprintf("cpu: tensor %T does not belong to the CPU backend", t))
	}
	return ct
}

func newF32(shape ...int) *tensor {
	s := append([]int(nil), shape...)
	return &tensor{shape: s, dt: compute.F32, f32: make([]float32, compute.NumElements(s))}
}

// f32Of returns the float32 data of a tensor, panicking for other dtypes
// (activations are always float32).
func f32Of(t compute.Tensor, op string) []float32 {
	ct := cast(t)
	if ct.dt != compute.F32 {
		panic(fmt.Sprintf("cpu.%s: want F32 activation, got %v", op, ct.dt))
	}
	return ct.f32
}

// bf16ToF32 and f16ToF32 widen 16-bit floats. Functions, not variables
// holding compute's: a call through a variable is never inlined, and the
// bf16 widening sits in the innermost loop of every projection.
func bf16ToF32(u uint16) float32 { return compute.BF16ToFloat32(u) }
func f16ToF32(h uint16) float32  { return compute.F16ToFloat32(h) }

// row writes row r of a [N, K] weight of any float dtype into dst as float32
// and returns dst (or the stored row itself for F32, without copying).
func (t *tensor) row(r int, dst []float32) []float32 {
	k := t.shape[len(t.shape)-1]
	switch t.dt {
	case compute.F32:
		return t.f32[r*k : (r+1)*k]
	case compute.BF16:
		src := t.u16[r*k : (r+1)*k]
		for i, u := range src {
			dst[i] = bf16ToF32(u)
		}
	case compute.F16:
		src := t.u16[r*k : (r+1)*k]
		for i, u := range src {
			dst[i] = f16ToF32(u)
		}
	default:
		panic(fmt.Sprintf("cpu: row of %v tensor", t.dt))
	}
	return dst
}

// floats returns all elements as float32 (a copy for 16-bit dtypes).
func (t *tensor) floats() []float32 {
	switch t.dt {
	case compute.F32:
		return t.f32
	case compute.BF16, compute.F16:
		out := make([]float32, len(t.u16))
		conv := bf16ToF32
		if t.dt == compute.F16 {
			conv = f16ToF32
		}
		for i, u := range t.u16 {
			out[i] = conv(u)
		}
		return out
	case compute.I32:
		out := make([]float32, len(t.i32))
		for i, v := range t.i32 {
			out[i] = float32(v)
		}
		return out
	}
	panic("cpu: unknown dtype")
}

func (b *Backend) Upload(dt compute.DType, shape []int, raw []byte) (compute.Tensor, error) {
	n := compute.NumElements(shape)
	if len(raw) != n*dt.Size() {
		return nil, fmt.Errorf("cpu upload: %d bytes for %v %v (want %d)", len(raw), dt, shape, n*dt.Size())
	}
	t := &tensor{shape: append([]int(nil), shape...), dt: dt}
	switch dt {
	case compute.F32:
		t.f32 = make([]float32, n)
		for i := range t.f32 {
			t.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case compute.BF16, compute.F16:
		t.u16 = make([]uint16, n)
		for i := range t.u16 {
			t.u16[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
	case compute.I32:
		t.i32 = make([]int32, n)
		for i := range t.i32 {
			t.i32[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	default:
		return nil, fmt.Errorf("cpu upload: unsupported dtype %v", dt)
	}
	return t, nil
}

func (b *Backend) FromF32(data []float32, shape ...int) compute.Tensor {
	if compute.NumElements(shape) != len(data) {
		panic(fmt.Sprintf("cpu.FromF32: %d values for shape %v", len(data), shape))
	}
	return &tensor{shape: append([]int(nil), shape...), dt: compute.F32, f32: append([]float32(nil), data...)}
}

func (b *Backend) FromI32(data []int32, shape ...int) compute.Tensor {
	if compute.NumElements(shape) != len(data) {
		panic(fmt.Sprintf("cpu.FromI32: %d values for shape %v", len(data), shape))
	}
	return &tensor{shape: append([]int(nil), shape...), dt: compute.I32, i32: append([]int32(nil), data...)}
}

func (b *Backend) Zeros(shape ...int) compute.Tensor { return newF32(shape...) }

func (b *Backend) ReadF32(t compute.Tensor) []float32 {
	ct := cast(t)
	if ct.dt == compute.F32 {
		return append([]float32(nil), ct.f32...)
	}
	return ct.floats()
}

func (b *Backend) ReadI32(t compute.Tensor) []int32 {
	ct := cast(t)
	if ct.dt != compute.I32 {
		panic("cpu.ReadI32: tensor is " + ct.dt.String())
	}
	return append([]int32(nil), ct.i32...)
}

func (b *Backend) Free(t compute.Tensor) {
	ct := cast(t)
	ct.f32, ct.u16, ct.i32 = nil, nil, nil
}

// Plan implements compute.Planner: the CPU backend has one way to run each op.
func (b *Backend) Plan() compute.Plan {
	return compute.Plan{Choices: []string{fmt.Sprintf("pure-Go reference ops on %d threads", b.workers)}}
}
