//go:build cuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// What gorgonia.org/cu v0.9.6 lacks: stream capture and graph launch.
static CUresult zs_begin_capture(void* s) {
	return cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED);
}
static CUresult zs_end_capture(void* s, CUgraph* g) { return cuStreamEndCapture((CUstream)s, g); }
static CUresult zs_instantiate(CUgraphExec* e, CUgraph g) { return cuGraphInstantiateWithFlags(e, g, 0); }
static CUresult zs_graph_launch(CUgraphExec e, void* s) { return cuGraphLaunch(e, (CUstream)s); }
static void zs_graph_destroy(CUgraph g, CUgraphExec e) {
	if (e) cuGraphExecDestroy(e);
	if (g) cuGraphDestroy(g);
}
static const char* zs_error_name(CUresult r) {
	const char* s = 0;
	cuGetErrorName(r, &s);
	return s ? s : "unknown CUDA error";
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// Graph is a captured sequence of kernels on the backend's stream, replayed
// with one launch (on an H200, 1.2 µs per tiny kernel replayed against 4.8
// µs launched eagerly from Go). The tensors allocated while capturing are
// pinned until Destroy, so their device addresses stay valid for every
// replay; inputs are fed by writing into tensors made before the capture
// (CopyInto, WriteI32, WriteF32), and outputs read from the tensors the
// captured ops returned.
type Graph struct {
	b      *Backend
	g      C.CUgraph
	e      C.CUgraphExec
	pinned []*storage
}

func cuErr(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s (%d)", C.GoString(C.zs_error_name(r)), int(r))
}

var _ compute.GraphOps = (*Backend)(nil)

// Capture records the device work f enqueues (backend ops only: no
// uploads, reads or Synchronize inside f) into a Graph (compute.GraphOps).
// f runs on the owner thread in one hand-off, like Run.
func (b *Backend) Capture(f func()) (compute.Graph, error) {
	g, err := b.capture(func() { b.Run(f) })
	if err != nil {
		return nil, err
	}
	return g, nil
}

func (b *Backend) capture(f func()) (g *Graph, err error) {
	stream := unsafe.Pointer(b.stream.C())
	b.do(func() {
		if e := cuErr(C.zs_begin_capture(stream)); e != nil {
			err = fmt.Errorf("cuda: begin capture: %w", e)
			return
		}
		b.pool.mu.Lock()
		b.pool.capturing = &[]*storage{}
		b.pool.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	var perr any
	func() {
		defer func() { perr = recover() }()
		f()
	}()
	g = &Graph{b: b}
	b.do(func() {
		b.pool.mu.Lock()
		if b.pool.capturing != nil {
			g.pinned = *b.pool.capturing
		}
		b.pool.capturing = nil
		b.pool.mu.Unlock()
		var cg C.CUgraph
		if e := cuErr(C.zs_end_capture(stream, &cg)); e != nil {
			err = fmt.Errorf("cuda: end capture: %w", e)
			return
		}
		g.g = cg
		var ce C.CUgraphExec
		if e := cuErr(C.zs_instantiate(&ce, cg)); e != nil {
			err = fmt.Errorf("cuda: instantiate graph: %w", e)
			return
		}
		g.e = ce
	})
	if perr != nil || err != nil {
		g.Destroy()
		if perr != nil {
			panic(perr)
		}
		return nil, err
	}
	return g, nil
}

// Launch replays the graph on the backend's stream (asynchronously: the
// next read waits for it).
func (g *Graph) Launch() (err error) {
	g.b.do(func() {
		if g.e == nil {
			err = fmt.Errorf("cuda: launch of a destroyed graph")
			return
		}
		if e := cuErr(C.zs_graph_launch(g.e, unsafe.Pointer(g.b.stream.C()))); e != nil {
			err = fmt.Errorf("cuda: graph launch: %w", e)
		}
	})
	return err
}

// Destroy frees the graph and unpins its tensors (idempotent).
func (g *Graph) Destroy() {
	if g.e == nil && g.g == nil && g.pinned == nil {
		return
	}
	g.b.do(func() {
		g.b.sync("graph destroy")
		C.zs_graph_destroy(g.g, g.e)
		g.g, g.e = nil, nil
	})
	for _, st := range g.pinned {
		st.unref()
	}
	g.pinned = nil
}

// WriteI32 copies host values into an existing I32 tensor in stream order
// (compute.GraphOps): a replayed graph's inputs.
func (b *Backend) WriteI32(dst compute.Tensor, data []int32) {
	t := cast(dst)
	if t.dt != compute.I32 || t.n() != len(data) {
		panic(fmt.Sprintf("gpu.WriteI32: %d values into %v %v", len(data), t.dt, t.shape))
	}
	if len(data) == 0 {
		return
	}
	b.do(func() {
		if err := cu.MemcpyHtoDAsync(t.ptr(), unsafe.Pointer(&data[0]), int64(4*len(data)), b.stream); err != nil {
			panic(fmt.Sprintf("gpu.WriteI32: %v", err))
		}
	})
	t.h.st.host = nil // the device copy no longer matches any host one
}

var _ compute.F32Writer = (*Backend)(nil)

// WriteF32 copies host floats into an existing F32 tensor
// (compute.F32Writer).
func (b *Backend) WriteF32(dst compute.Tensor, data []float32) {
	t := cast(dst)
	if t.dt != compute.F32 || t.n() != len(data) {
		panic(fmt.Sprintf("gpu.WriteF32: %d values into %v %v", len(data), t.dt, t.shape))
	}
	if len(data) == 0 {
		return
	}
	b.do(func() {
		if err := cu.MemcpyHtoDAsync(t.ptr(), unsafe.Pointer(&data[0]), int64(4*len(data)), b.stream); err != nil {
			panic(fmt.Sprintf("gpu.WriteF32: %v", err))
		}
	})
}

// Clear zeroes a tensor in place (compute.GraphOps).
func (b *Backend) Clear(dst compute.Tensor) {
	t := cast(dst)
	n := t.n() * t.dt.Size()
	if n == 0 {
		return
	}
	b.do(func() {
		if err := cu.MemsetD8Async(t.ptr(), 0, int64(n), b.stream); err != nil {
			panic(fmt.Sprintf("gpu.Clear %v: %v", t.shape, err))
		}
	})
}
