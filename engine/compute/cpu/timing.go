package cpu

import (
	"runtime"
	"time"

	"zonostream/engine/compute"
)

var _ compute.Timer = (*Backend)(nil)

// Time is wall time: CPU ops are synchronous.
func (b *Backend) Time(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// CopyBandwidth copies n bytes between two buffers on every worker (best of
// three), counting bytes read plus written.
func (b *Backend) CopyBandwidth(n int) float64 {
	src := make([]byte, n)
	dst := make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		start := time.Now()
		b.parallelFor(n/(1<<20), func(lo, hi int) {
			copy(dst[lo<<20:hi<<20], src[lo<<20:hi<<20])
		})
		if r := float64(2*n) / time.Since(start).Seconds(); r > best {
			best = r
		}
	}
	runtime.KeepAlive(dst)
	return best
}

// ReadBandwidth sums n bytes of float32s on every worker (best of three).
func (b *Backend) ReadBandwidth(n int) float64 {
	buf := make([]float32, n/4)
	for i := range buf {
		buf[i] = float32(i & 7)
	}
	sums := make([]float32, b.workers*16)
	best := 0.0
	for rep := 0; rep < 3; rep++ {
		start := time.Now()
		chunk := (len(buf) + b.workers - 1) / b.workers
		b.parallelFor(b.workers, func(lo, hi int) {
			for g := lo; g < hi; g++ {
				var s0, s1, s2, s3 float32
				part := buf[g*chunk : min((g+1)*chunk, len(buf))]
				for i := 0; i+4 <= len(part); i += 4 {
					s0 += part[i]
					s1 += part[i+1]
					s2 += part[i+2]
					s3 += part[i+3]
				}
				sums[g*16] = s0 + s1 + s2 + s3
			}
		})
		if r := float64(n) / time.Since(start).Seconds(); r > best {
			best = r
		}
	}
	return best
}

// MemoryInUse is the Go heap in use (weights, caches and activations all
// live there).
func (b *Backend) MemoryInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
