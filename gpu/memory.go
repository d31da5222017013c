//go:build cuda

package gpu

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"weak"

	"gorgonia.org/cu"
)

// pool is the caching device allocator. Blocks are rounded up to a size
// class (256 B granules up to 1 MiB, then four classes per power of two),
// handed out from per-class free lists, and returned there when their last
// tensor is freed or collected. Returning needs no driver call, so tensor
// cleanups (which run on the runtime's cleanup goroutine) only take the
// mutex. Each lane (lane.go) has its own pool, and every kernel and copy
// of a lane runs on that lane's one stream, so a block reused by a later
// op is only touched after the earlier ops that read it: no
// synchronisation is needed to recycle.
//
// Tensors that models drop without Free are found by the garbage
// collector, which knows nothing of device memory: once gcEvery bytes
// (gcMin..gcMax) were handed out, the pool starts a collection on a
// goroutine of its own and releases the tensors it found dead (weak
// pointers), while the owner goes on launching; a miss while one runs
// waits for it before asking the driver. (A collection run by the owner at
// the miss itself stalled it, GPU idle, for about 1.5 ms at the start of
// every utterance: H200, 2026-11-30.)
type pool struct {
	b        *Backend
	mu       sync.Mutex
	free     map[int64][]cu.DevicePtr
	reserved int64 // bytes obtained from the driver
	inUse    int64 // bytes handed out and not yet returned
	peak     int64
	sinceGC  int64
	driver   int // cuMemAlloc calls
	gcs      int // forced collections
	gcEvery  int64

	capturing *[]*storage   // storages made during a graph capture (pinned by the Graph)
	gcDone    chan struct{} // closed when the collection in flight ends; nil when none runs
	live      map[*handle]weak.Pointer[tensor]
}

// Bytes handed out since the last forced collection before a miss forces
// the next one. In steady state a collection frees about what was handed
// out since the previous one, and the next miss comes when that is used
// up: with the threshold at gcMin the pool settles at about gcMin plus the
// live tensors and stops asking the driver.
const (
	gcMin = 128 << 20
	gcMax = 2 << 30
)

func newPool(b *Backend) *pool {
	return &pool{b: b, free: map[int64][]cu.DevicePtr{}, gcEvery: gcMin, live: map[*handle]weak.Pointer[tensor]{}}
}

// sizeClass rounds n bytes up to its class.
func sizeClass(n int64) int64 {
	if n <= 0 {
		n = 1
	}
	if n <= 1<<20 {
		return (n + 255) &^ 255
	}
	p := int64(1) << (63 - bits.LeadingZeros64(uint64(n-1))) // largest power of 2 < n
	step := p / 4
	return (n + step - 1) / step * step
}

// pop takes a block of class c from its free list.
func (p *pool) pop(c int64) (cu.DevicePtr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.free[c]
	if len(l) == 0 {
		return 0, false
	}
	ptr := l[len(l)-1]
	p.free[c] = l[:len(l)-1]
	p.inUse += c
	p.peak = max(p.peak, p.inUse)
	p.sinceGC += c
	return ptr, true
}

// alloc returns a block of at least n bytes (owner goroutine).
func (p *pool) alloc(n int64) (cu.DevicePtr, int64) {
	c := sizeClass(n)
	ptr, ok := p.pop(c)
	done := p.collectBehind()
	if ok {
		return ptr, c
	}
	if done != nil { // a collection is under way: what it finds may serve this miss
		<-done
		if ptr, ok := p.pop(c); ok {
			return ptr, c
		}
	}
	ptr, err := cu.MemAlloc(c)
	if err != nil {
		// Out of memory: collect, then give cached blocks of other classes
		// back to the driver, then retry once.
		if ptr, ok := p.collect(c); ok {
			return ptr, c
		}
		p.drain()
		if ptr, err = cu.MemAlloc(c); err != nil {
			free, total, _ := cu.MemInfo()
			panic(fmt.Sprintf("gpu: out of device memory: %s needed for one more tensor, %s free of %s on the device (cuMemGetInfo; %s already held by this process); close other GPU programs, or run on the CPU with --backend cpu",
				gib(c), gib(free), gib(total), gib(p.inUse)))
		}
	}
	p.mu.Lock()
	p.reserved += c
	p.inUse += c
	p.peak = max(p.peak, p.inUse)
	p.sinceGC += c
	p.driver++
	p.mu.Unlock()
	return ptr, c
}

// collectBehind starts a collection on its own goroutine once gcEvery
// bytes were handed out since the last one, and returns the channel that
// closes when the collection in flight (if any) ends (owner goroutine).
func (p *pool) collectBehind() chan struct{} {
	p.mu.Lock()
	start := p.gcDone == nil && p.sinceGC >= p.gcEvery
	if start {
		p.gcDone = make(chan struct{})
		p.sinceGC = 0
	}
	done := p.gcDone
	p.mu.Unlock()
	if start {
		if s := p.b.scope; s != nil {
			s.flush() // a Run's unfreed tensors, so the collection sees them
		}
		go func() {
			found := p.gcRelease()
			p.mu.Lock()
			// Adapt: a collection that found nothing (loading weights,
			// growing caches) makes the next one wait twice as long; a
			// useful one brings the threshold back down.
			if found > 0 {
				p.gcEvery = max(p.gcEvery/2, gcMin)
			} else {
				p.gcEvery = min(p.gcEvery*2, gcMax)
			}
			p.gcDone = nil
			p.mu.Unlock()
			close(done)
		}()
	}
	return done
}

// collect runs a collection now and retries class c (owner goroutine; the
// out-of-memory path, and tests).
func (p *pool) collect(c int64) (cu.DevicePtr, bool) {
	p.mu.Lock()
	done := p.gcDone
	p.mu.Unlock()
	if done != nil {
		<-done
	}
	if s := p.b.scope; s != nil {
		s.flush() // a Run's unfreed tensors, so the collection sees them
	}
	p.mu.Lock()
	p.sinceGC = 0
	p.mu.Unlock()
	p.gcRelease()
	return p.pop(c)
}

// gcRelease runs the garbage collector and releases, at once, every
// tensor it found unreachable: their weak pointers are nil as soon as the
// collection ends, while their cleanups would only run later on the
// runtime's cleanup goroutines (releasing twice is harmless: the handle
// counts once). It returns how many it released (any goroutine).
func (p *pool) gcRelease() int {
	runtime.GC()
	var dead []*handle
	p.mu.Lock()
	p.gcs++
	for h, w := range p.live {
		if w.Value() == nil {
			dead = append(dead, h)
		}
	}
	p.mu.Unlock()
	for _, h := range dead {
		h.release()
	}
	return len(dead)
}

// put returns a block (any goroutine).
func (p *pool) put(ptr cu.DevicePtr, c int64) {
	p.mu.Lock()
	p.free[c] = append(p.free[c], ptr)
	p.inUse -= c
	p.mu.Unlock()
}

// drain gives every cached block back to the driver (owner goroutine).
func (p *pool) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, l := range p.free {
		for _, ptr := range l {
			_ = cu.MemFree(ptr)
			p.reserved -= c
		}
		delete(p.free, c)
	}
}

// MemStats describes the allocator: bytes reserved from the driver, bytes
// held by live tensors, their peak, cuMemAlloc calls and forced GCs.
type MemStats struct {
	Reserved, InUse, Peak int64
	DriverAllocs, GCs     int
}

// MemStats returns the allocator's counters.
func (b *Backend) MemStats() MemStats {
	p := b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return MemStats{Reserved: p.reserved, InUse: p.inUse, Peak: p.peak, DriverAllocs: p.driver, GCs: p.gcs}
}

// gib formats a byte count for messages.
func gib(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
