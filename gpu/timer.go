//go:build cuda

package gpu

import (
	"fmt"
	"time"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

var _ compute.Timer = (*Backend)(nil)

// Time returns the device time between two CUDA events recorded on the
// backend's stream around the work fn queues; the stream is synchronised
// before (so earlier work is not counted) and after.
func (b *Backend) Time(fn func()) time.Duration {
	var start, end cu.Event
	b.do(func() {
		b.sync("timer start")
		var err error
		if start, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
			panic(fmt.Sprintf("gpu: timer event: %v", err))
		}
		if end, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
			_ = cu.DestroyEvent(&start)
			panic(fmt.Sprintf("gpu: timer event: %v", err))
		}
		if err = start.Record(b.stream); err != nil {
			panic(fmt.Sprintf("gpu: timer record: %v", err))
		}
	})
	defer b.do(func() {
		_ = cu.DestroyEvent(&start)
		_ = cu.DestroyEvent(&end)
	})
	fn()
	var ms float64
	b.do(func() {
		if err := end.Record(b.stream); err != nil {
			panic(fmt.Sprintf("gpu: timer record: %v", err))
		}
		b.sync("timer end")
		var err error
		if ms, err = start.Elapsed(end); err != nil {
			panic(fmt.Sprintf("gpu: timer elapsed: %v", err))
		}
	})
	return time.Duration(ms * float64(time.Millisecond))
}

// bandwidthReps is how many timed passes a bandwidth probe takes the best of.
const bandwidthReps = 7

// probe times kernel k over n bytes (rounded down to 16-byte words) on
// fresh buffers, best of bandwidthReps after one warm-up pass, and returns
// bytes·factor per second.
func (b *Backend) probe(name string, n int, factor float64) float64 {
	words := n / 16
	if words < 1 {
		panic(fmt.Sprintf("gpu: bandwidth probe over %d bytes", n))
	}
	blocks := 132 * 16 // enough resident blocks for any current GPU
	// The buffers come from the driver and go back to it (not through the
	// caching allocator), so MemoryInUse does not count them afterwards.
	var src, dst cu.DevicePtr
	b.do(func() {
		var err error
		dstBytes := int64(blocks) * 4
		if name == "copy_u4" {
			dstBytes = int64(words) * 16
		}
		if src, err = cu.MemAlloc(int64(words) * 16); err != nil {
			panic(fmt.Sprintf("gpu: bandwidth probe over %d bytes: %v", n, err))
		}
		if dst, err = cu.MemAlloc(dstBytes); err != nil {
			_ = cu.MemFree(src)
			panic(fmt.Sprintf("gpu: bandwidth probe over %d bytes: %v", n, err))
		}
		if err = cu.MemsetD32Async(src, 0x3f800000, int64(words*4), b.stream); err == nil {
			err = cu.MemsetD32Async(dst, 0, dstBytes/4, b.stream)
		}
		if err != nil {
			panic(fmt.Sprintf("gpu: bandwidth probe: %v", err))
		}
	})
	defer b.do(func() {
		b.sync("bandwidth probe")
		_ = cu.MemFree(src)
		_ = cu.MemFree(dst)
	})
	best := time.Duration(0)
	for rep := 0; rep <= bandwidthReps; rep++ {
		d := b.Time(func() {
			b.do(func() { b.launch(b.k[name], [3]int{blocks, 1, 1}, block256, src, dst, words) })
		})
		if rep > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	if best <= 0 {
		return 0
	}
	return float64(words*16) * factor / best.Seconds()
}

// CopyBandwidth copies n bytes device to device with 128-bit loads and
// stores (best of several), counting bytes read plus written.
func (b *Backend) CopyBandwidth(n int) float64 { return b.probe("copy_u4", n, 2) }

// ReadBandwidth streams n bytes through 128-bit loads (best of several).
func (b *Backend) ReadBandwidth(n int) float64 { return b.probe("read_u4", n, 1) }

// MemoryInUse is the device memory the backend holds: every block the
// allocators of all its lanes obtained from the driver (weights, caches,
// activations and the cached free blocks they keep for reuse).
func (b *Backend) MemoryInUse() int64 {
	var lanes []*Backend
	b.do(func() { lanes = append(lanes, b.lanes...) })
	var n int64
	for _, l := range lanes {
		n += l.MemStats().Reserved
	}
	return n
}
