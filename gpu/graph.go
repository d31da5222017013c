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
)

// Graph is a captured sequence of kernels on the backend's stream, replayed
// with one launch (1.2 µs per kernel instead of 4.8 µs eager, GPU.md). The
// tensors allocated while capturing are pinned until Destroy, so their
// device addresses stay valid for every replay; inputs are fed by writing
// into tensors made before the capture (CopyInto), and outputs read from
// the tensors the captured ops returned.
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

// Capture records the device work f enqueues (backend ops only: no
// uploads, reads or Synchronize inside f) into a Graph.
func (b *Backend) Capture(f func()) (g *Graph, err error) {
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
func (g *Graph) Launch() {
	g.b.do(func() {
		if e := cuErr(C.zs_graph_launch(g.e, unsafe.Pointer(g.b.stream.C()))); e != nil {
			panic(fmt.Sprintf("gpu: graph launch: %v", e))
		}
	})
}

// Destroy frees the graph and unpins its tensors.
func (g *Graph) Destroy() {
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
