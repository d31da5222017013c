//go:build cuda

package gpu

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

static CUresult zs_host_alloc(void** p, size_t n) { return cuMemAllocHost(p, n); }
static CUresult zs_host_free(void* p) { return cuMemFreeHost(p); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// Lanes: the vocoder runs beside decoding.
//
// One goroutine issues every driver call of a device (backend.go), so two
// streams of work can only overlap on the GPU if neither holds that
// goroutine while its kernels run. Two things make that so:
//
//   - Lane gives a second Backend on its own stream (lower priority than
//     the main one) with its own memory pool: blocks freed by one lane are
//     reused in that lane's stream order only, which keeps the allocator's
//     no-synchronisation recycling (memory.go) sound with two streams.
//   - Reading a tensor back (reader) enqueues the copy into pinned host
//     memory and an event, and then waits for the event on the lane's own
//     OS thread, not on the owner: meanwhile the owner launches the other
//     lane's work. A copy into pageable memory would make the driver block
//     the issuing thread until the copy is done.
//
// The engine gives the DAC a lane (compute.Laned), so a vocoder window
// never delays a decode step by more than the launches it takes.

var _ compute.Laned = (*Backend)(nil)

// Stream priorities (plan.decodeFirst). Where decode steps run mamba_run
// (the Hopper plan), the main lane (decoding) gets the highest priority
// and the side lane (the vocoder) the lowest: mamba_run's blocks each fill
// an SM and all wait at its barriers for the last to become resident, so a
// vocoder kernel served first holds the whole step up. Measured on an
// H200, 2026-11-30: steady frame 1.582 against 1.681 ms with the vocoder
// first, generation 6.74× against 6.29× real time.
//
// Otherwise the side lane gets the highest, so the block scheduler serves
// a vocoder kernel's blocks as soon as a decode kernel's blocks leave an
// SM. The vocoder's kernels are a chain of a few hundred small ones, each
// waiting for the last; behind the decode step's GEMVs each would wait for
// a free SM. Measured on an H200 without mamba_run, 2026-11-30: the first
// emission 1.34 ms against 1.67 ms with decoding first, the decode step
// the same.

// streamPriority is the priority of the main lane's stream (side false)
// or the side lane's.
func streamPriority(side, decodeFirst bool) int {
	least, greatest, _ := cu.StreamPriorityRange()
	if side == decodeFirst {
		return least
	}
	return greatest
}

// Lane returns the device's side lane (compute.Laned), made on first use:
// a Backend on a second stream, of the other priority (streamPriority),
// with its own memory pool.
// Tensors may be passed between lanes only when the work that made them
// is known to be done (the lane read them back, or they are weights).
// Lane of a side lane is that lane.
func (b *Backend) Lane() compute.Backend {
	if b.side {
		return b
	}
	var l *Backend
	b.do(func() {
		if len(b.lanes) > 1 {
			l = b.lanes[1]
			return
		}
		s, err := cu.MakeStreamWithPriority(streamPriority(true, b.decodeFirst()), cu.NonBlocking)
		if err != nil {
			panic(fmt.Sprintf("gpu: creating the side lane's stream: %v", err))
		}
		l = &Backend{device: b.device, stream: s, side: true}
		if b.persistentMamba {
			if err := l.allocRunSync(); err != nil {
				panic(fmt.Sprintf("gpu: the side lane's barrier counters: %v", err))
			}
		}
		l.pool = newPool(l)
		l.reader = newReader(l)
		b.lanes = append(b.lanes, l)
	})
	return l
}

// reader copies tensors of one lane back to the host through a pinned
// buffer; a goroutine locked to its own OS thread (with the context
// current) waits for each copy's event.
type reader struct {
	b    *Backend
	mu   sync.Mutex // one read at a time: one buffer, one event
	buf  unsafe.Pointer
	size int64
	ev   cu.Event
	req  chan struct{}
	res  chan error
	quit chan struct{}
	sent atomic.Int64 // reads handed to the waiter (tests)
}

// newReader makes the lane's reader and starts its waiter (owner
// goroutine). The main lane's event spins while it waits (a decode step's
// tokens: microseconds count); a side lane's sleeps (a vocoder window
// takes milliseconds).
func newReader(b *Backend) *reader {
	flags := cu.DisableTiming
	if b.side {
		flags |= cu.BlockingSyncEvent
	}
	ev, err := cu.MakeEvent(flags)
	if err != nil {
		panic(fmt.Sprintf("gpu: read-back event: %v", err))
	}
	r := &reader{b: b, ev: ev, req: make(chan struct{}, 1), res: make(chan error, 1), quit: make(chan struct{})}
	ready := make(chan error)
	go r.wait(b.ctx, ready)
	if err := <-ready; err != nil {
		_ = cu.DestroyEvent(&r.ev)
		panic(fmt.Sprintf("gpu: read-back thread: %v", err))
	}
	return r
}

// wait is the reader's waiter goroutine.
func (r *reader) wait(ctx cu.CUContext, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case <-r.req:
			r.res <- r.ev.Synchronize()
		case <-r.quit:
			return
		}
	}
}

// reserve makes the pinned buffer hold at least n bytes (owner goroutine,
// r.mu held, no copy in flight).
func (r *reader) reserve(n int64) {
	if n <= r.size {
		return
	}
	if r.buf != nil {
		_ = cuErr(C.zs_host_free(r.buf))
		r.buf, r.size = nil, 0
	}
	size := max(n, 64<<10)
	if err := cuErr(C.zs_host_alloc(&r.buf, C.size_t(size))); err != nil {
		r.buf = nil
		panic(fmt.Sprintf("gpu: %s of pinned host memory for reading back: %v", gib(size), err))
	}
	r.size = size
}

// close stops the waiter and frees the buffer and event (owner goroutine).
func (r *reader) close() {
	if r == nil {
		return
	}
	close(r.quit)
	if r.buf != nil {
		_ = cuErr(C.zs_host_free(r.buf))
		r.buf = nil
	}
	_ = cu.DestroyEvent(&r.ev)
}

// readRaw copies a tensor's bytes to the host after the lane's queued
// work. The owner goroutine only enqueues the copy; the wait happens on
// the reader's thread (unless the caller is the owner itself, inside Run:
// then it copies and waits there, readOnOwner, as it must not wait for a
// reader another goroutine may hold while it waits for the owner). An asynchronous kernel fault surfaces here
// as a panic naming it.
func (b *Backend) readRaw(t *tensor) []byte { return b.readRawAsync(t)() }

// readRawAsync is readRaw in two halves: the copy is queued (behind the
// lane's work so far) when it returns, and the function it returns waits
// for it. The lane's reader is held in between: call the function before
// the next read.
func (b *Backend) readRawAsync(t *tensor) func() []byte {
	if syscall.Gettid() == b.ownerTID {
		raw := b.readOnOwner(t)
		return func() []byte { return raw }
	}
	n := int64(t.n() * t.dt.Size())
	r := b.reader
	r.mu.Lock()
	queued := false
	defer func() {
		if !queued { // a panic on the way: the read never started
			r.mu.Unlock()
		}
	}()
	b.do(func() {
		r.reserve(n)
		if n > 0 {
			if err := cu.MemcpyDtoHAsync(r.buf, t.ptr(), n, b.stream); err != nil {
				panic(fmt.Sprintf("gpu: read %v %v: %v", t.dt, t.shape, err))
			}
		}
		if err := r.ev.Record(b.stream); err != nil {
			panic(fmt.Sprintf("gpu: read %v %v: recording its event: %v", t.dt, t.shape, err))
		}
		r.req <- struct{}{}
		r.sent.Add(1)
	})
	queued = true
	return func() []byte {
		defer r.mu.Unlock()
		if err := <-r.res; err != nil {
			panic(fmt.Sprintf("gpu: read back: %v", err))
		}
		raw := make([]byte, n)
		if n > 0 {
			copy(raw, unsafe.Slice((*byte)(r.buf), n))
		}
		return raw
	}
}
