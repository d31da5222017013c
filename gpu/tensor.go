//go:build cuda

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
	"weak"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// storage is one device block shared by a tensor and its reshaped views;
// it returns to the pool when the last of them is freed or collected.
type storage struct {
	ptr   cu.DevicePtr
	class int64
	refs  atomic.Int32
	pool  *pool
	host  []int32 // host copy of I32 data made from the host (ids), for validation
}

func (s *storage) unref() {
	if s.refs.Add(-1) == 0 {
		s.pool.put(s.ptr, s.class)
	}
}

// handle is a tensor's one reference to its storage; explicit Free and the
// GC cleanup both release it, whichever comes first.
type handle struct {
	st   *storage
	done atomic.Bool
}

func (h *handle) release() {
	if h.done.CompareAndSwap(false, true) {
		p := h.st.pool
		p.mu.Lock()
		delete(p.live, h)
		p.mu.Unlock()
		h.st.unref()
	}
}

// tensor is the CUDA tensor.
type tensor struct {
	shape []int
	dt    compute.DType
	h     *handle
	f32   *tensor // fp32 copy of a 16-bit weight, made on first use by a kernel that wants fp32

	// prep is a convolution weight laid out for conv_tcq (convPrepA),
	// prepKey the mode and phases it was laid out for.
	prep    *tensor
	prepKey [2]int
}

func (t *tensor) Shape() []int         { return t.shape }
func (t *tensor) DType() compute.DType { return t.dt }

func (t *tensor) n() int { return compute.NumElements(t.shape) }

// ptr is the device address; using a freed tensor panics.
func (t *tensor) ptr() cu.DevicePtr {
	if t.h.done.Load() {
		panic(fmt.Sprintf("gpu: use of a freed %v tensor %v", t.dt, t.shape))
	}
	return t.h.st.ptr
}

// wrap makes a tensor holding a reference to st. owner says the caller is
// the owner goroutine: inside Run the tensor then joins the Run's scope
// instead of the collector's books (scope.go).
func (b *Backend) wrap(st *storage, dt compute.DType, shape []int, owner bool) *tensor {
	st.refs.Add(1)
	h := &handle{st: st}
	t := &tensor{shape: append([]int(nil), shape...), dt: dt, h: h}
	if owner && b.scope != nil {
		b.scope.made = append(b.scope.made, t)
		return t
	}
	track(t)
	return t
}

// track hands t to the collector: a cleanup releases it once it is
// unreachable, and the pool's weak pointer lets the pool's collection
// release it at once (memory.go).
func track(t *tensor) {
	h := t.h
	runtime.AddCleanup(t, func(h *handle) { h.release() }, h)
	h.st.pool.mu.Lock()
	h.st.pool.live[h] = weak.Make(t)
	h.st.pool.mu.Unlock()
}

// newTensor allocates an uninitialised tensor (owner goroutine).
func (b *Backend) newTensor(dt compute.DType, shape ...int) *tensor {
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("gpu: negative dimension in %v", shape))
		}
	}
	n := int64(compute.NumElements(shape)) * int64(dt.Size())
	ptr, c := b.pool.alloc(n)
	st := &storage{ptr: ptr, class: c, pool: b.pool}
	b.pool.mu.Lock()
	if b.pool.capturing != nil {
		st.refs.Add(1) // the Graph's reference
		*b.pool.capturing = append(*b.pool.capturing, st)
	}
	b.pool.mu.Unlock()
	return b.wrap(st, dt, shape, true)
}

func cast(t compute.Tensor) *tensor {
	ct, ok := t.(*tensor)
	if !ok {
		panic(fmt.Sprintf("gpu: tensor %T does not belong to the CUDA backend", t))
	}
	return ct
}

func f32Of(t compute.Tensor, op string) *tensor {
	ct := cast(t)
	if ct.dt != compute.F32 {
		panic(fmt.Sprintf("gpu.%s: want F32 activation, got %v", op, ct.dt))
	}
	return ct
}

// upload copies host bytes into a new tensor in stream order (owner).
// From pageable memory, which raw always is (Go memory), the driver has
// staged the bytes by the time the copy call returns, so raw may change
// at once; wait also waits for the stream, so that a weight upload
// reports its faults itself. Activations (FromF32, FromI32) do not wait:
// the conditioning's dozen small uploads each waited for the stream.
func (b *Backend) upload(dt compute.DType, shape []int, raw []byte, wait bool) *tensor {
	t := b.newTensor(dt, shape...)
	if len(raw) > 0 {
		if err := cu.MemcpyHtoDAsync(t.ptr(), unsafe.Pointer(&raw[0]), int64(len(raw)), b.stream); err != nil {
			panic(fmt.Sprintf("gpu: upload of %d bytes: %v", len(raw), err))
		}
		if wait {
			b.sync("upload")
		}
	}
	return t
}

func (b *Backend) Upload(dt compute.DType, shape []int, raw []byte) (compute.Tensor, error) {
	n := compute.NumElements(shape)
	switch dt {
	case compute.F32, compute.BF16, compute.F16, compute.I32:
	default:
		return nil, fmt.Errorf("cuda upload: unsupported dtype %v", dt)
	}
	if len(raw) != n*dt.Size() {
		return nil, fmt.Errorf("cuda upload: %d bytes for %v %v (want %d)", len(raw), dt, shape, n*dt.Size())
	}
	var t *tensor
	var perr any
	b.do(func() {
		defer func() { perr = recover() }()
		t = b.upload(dt, shape, raw, true)
	})
	if perr != nil {
		return nil, fmt.Errorf("cuda upload %v %v: %v", dt, shape, perr)
	}
	if dt == compute.I32 {
		h := make([]int32, n)
		for i := range h {
			h[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		t.h.st.host = h
	}
	return t, nil
}

func f32Bytes(data []float32) []byte {
	if len(data) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 4*len(data))
}

func (b *Backend) FromF32(data []float32, shape ...int) compute.Tensor {
	if compute.NumElements(shape) != len(data) {
		panic(fmt.Sprintf("gpu.FromF32: %d values for shape %v", len(data), shape))
	}
	var t *tensor
	b.do(func() { t = b.upload(compute.F32, shape, f32Bytes(data), false) })
	runtime.KeepAlive(data)
	return t
}

func (b *Backend) FromI32(data []int32, shape ...int) compute.Tensor {
	if compute.NumElements(shape) != len(data) {
		panic(fmt.Sprintf("gpu.FromI32: %d values for shape %v", len(data), shape))
	}
	var raw []byte
	if len(data) > 0 {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 4*len(data))
	}
	var t *tensor
	b.do(func() { t = b.upload(compute.I32, shape, raw, false) })
	t.h.st.host = append([]int32(nil), data...)
	return t
}

func (b *Backend) Zeros(shape ...int) compute.Tensor {
	var t *tensor
	b.do(func() {
		t = b.newTensor(compute.F32, shape...)
		if n := t.n(); n > 0 {
			if err := cu.MemsetD32Async(t.ptr(), 0, int64(n), b.stream); err != nil {
				panic(fmt.Sprintf("gpu.Zeros %v: %v", shape, err))
			}
		}
	})
	return t
}

// readOnOwner is readRaw on the owner goroutine itself (inside Run): the
// copy into pageable memory and a wait for the lane's stream.
func (b *Backend) readOnOwner(t *tensor) []byte {
	raw := make([]byte, t.n()*t.dt.Size())
	if len(raw) > 0 {
		if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&raw[0]), t.ptr(), int64(len(raw)), b.stream); err != nil {
			panic(fmt.Sprintf("gpu: read %v %v: %v", t.dt, t.shape, err))
		}
	}
	b.sync("read back")
	return raw
}

func (b *Backend) ReadF32(t compute.Tensor) []float32 {
	ct := cast(t)
	raw := b.readRaw(ct)
	n := ct.n()
	out := make([]float32, n)
	switch ct.dt {
	case compute.F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case compute.BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case compute.F16:
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case compute.I32:
		for i := range out {
			out[i] = float32(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	}
	return out
}

func (b *Backend) ReadI32(t compute.Tensor) []int32 {
	ct := cast(t)
	if ct.dt != compute.I32 {
		panic("gpu.ReadI32: tensor is " + ct.dt.String())
	}
	return i32s(b.readRaw(ct))
}

// ReadI32Async starts reading an I32 tensor (compute.GraphOps): the copy
// is queued now, the returned function waits for it.
func (b *Backend) ReadI32Async(t compute.Tensor) func() []int32 {
	ct := cast(t)
	if ct.dt != compute.I32 {
		panic("gpu.ReadI32Async: tensor is " + ct.dt.String())
	}
	wait := b.readRawAsync(ct)
	return func() []int32 { return i32s(wait()) }
}

func i32s(raw []byte) []int32 {
	out := make([]int32, len(raw)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// Free returns the tensor's storage to the pool once no view uses it.
func (b *Backend) Free(t compute.Tensor) { cast(t).h.release() }

// f16ToF32 widens an IEEE half.
var f16ToF32 = compute.F16ToFloat32

// asF32 returns an fp32 version of a (small) weight, converting a 16-bit
// one once and caching the copy on the tensor (owner goroutine).
func (b *Backend) asF32(t *tensor) *tensor {
	switch t.dt {
	case compute.F32:
		return t
	case compute.BF16, compute.F16:
	default:
		panic(fmt.Sprintf("gpu: %v tensor used as a float weight", t.dt))
	}
	if t.f32 != nil {
		return t.f32
	}
	c := b.newTensor(compute.F32, t.shape...)
	if n := t.n(); n > 0 {
		b.launch(b.k["to_f32"], grid1(n), block256, t.ptr(), c.ptr(), n, int(t.dt))
	}
	b.pool.mu.Lock()
	capturing := b.pool.capturing != nil
	b.pool.mu.Unlock()
	if !capturing { // a copy made inside a graph is only filled by its replays
		t.f32 = c
	}
	return c
}
