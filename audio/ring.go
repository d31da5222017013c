package audio

import (
	"fmt"
	"sync/atomic"
	"time"
)

// MaxRingDuration bounds NewRing so a mistyped size cannot allocate
// gigabytes: ten minutes of audio (26.5 M samples at 44.1 kHz, 106 MB).
const MaxRingDuration = 10 * time.Minute

// maxRingSamples is MaxRingDuration at 192 kHz, the highest common rate.
const maxRingSamples = int(MaxRingDuration/time.Second) * 192000

// Ring is a single-producer single-consumer lock-free FIFO of float32
// samples. One goroutine (the producer: the engine) calls Write and Reset;
// one other (the consumer: the audio callback) calls Read. Len, Free, Cap,
// Written and Consumed may be called from anywhere.
//
// Neither side ever blocks, allocates or takes a lock: positions are
// monotonically increasing 64-bit counters published with atomics (they
// would take millions of years to wrap at 44.1 kHz), and the samples
// between them are handed over by the release/acquire ordering of those
// atomics. A full ring makes Write return short; an empty one makes Read
// return short; what to do then (wait, pad with silence, count an underrun)
// is the caller's policy.
type Ring struct {
	buf []float32
	n   uint64 // len(buf)

	_ [56]byte // keep the producer's and consumer's counters on separate cache lines
	// w is the number of samples ever written; only the producer stores it.
	w atomic.Uint64
	_ [56]byte
	// r is the number of samples ever consumed (read or dropped); only the
	// consumer stores it.
	r atomic.Uint64
	_ [56]byte
	// drop is a position set by Reset: the consumer skips everything
	// before it at its next Read. Only the producer stores it.
	drop atomic.Uint64
}

// NewRing allocates a ring holding d of audio at rate samples per second
// (rounded up to a whole sample).
func NewRing(d time.Duration, rate int) (*Ring, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("audio ring: sample rate %d Hz is not positive; use %d", rate, SampleRate)
	}
	if d <= 0 || d > MaxRingDuration {
		return nil, fmt.Errorf("audio ring: size %v is out of range; use between 1ms and %v", d, MaxRingDuration)
	}
	n := (int64(d)*int64(rate) + int64(time.Second) - 1) / int64(time.Second)
	return NewRingSamples(int(n))
}

// NewRingSamples allocates a ring of exactly n samples.
func NewRingSamples(n int) (*Ring, error) {
	if n <= 0 || n > maxRingSamples {
		return nil, fmt.Errorf("audio ring: capacity %d samples is out of range; use 1..%d (%v at 192 kHz)", n, maxRingSamples, MaxRingDuration)
	}
	return &Ring{buf: make([]float32, n), n: uint64(n)}, nil
}

// Cap is the capacity in samples.
func (r *Ring) Cap() int { return int(r.n) }

// Write copies as many samples of p as fit and returns that count. It never
// blocks: a full ring takes nothing. Producer only.
func (r *Ring) Write(p []float32) int {
	w := r.w.Load()
	used := w - r.r.Load() // acquire: the consumer is done with slots before r
	free := r.n - used
	k := uint64(len(p))
	if k > free {
		k = free
	}
	if k == 0 {
		return 0
	}
	at := w % r.n
	c := copy(r.buf[at:], p[:k])
	copy(r.buf, p[c:k])
	r.w.Store(w + k) // release: the samples are in place
	return int(k)
}

// Read copies up to len(p) of the oldest unread samples into p and returns
// the count; samples dropped by Reset are skipped first. It never blocks,
// allocates or locks. Consumer only.
func (r *Ring) Read(p []float32) int {
	pos := r.r.Load()
	// Load drop before w: Reset stores a value w already had, so d <= w.
	// (The other order can see a drop newer than w and read past it.)
	if d := r.drop.Load(); d > pos {
		pos = d
	}
	w := r.w.Load() // acquire: samples before w are in place
	k := w - pos
	if uint64(len(p)) < k {
		k = uint64(len(p))
	}
	if k > 0 {
		at := pos % r.n
		c := copy(p[:k], r.buf[at:])
		copy(p[c:k], r.buf)
	}
	r.r.Store(pos + k) // release: the slots may be reused
	return int(k)
}

// Len is the number of samples waiting to be read (the fill level). Exact
// from either side for the calling side's own view; a snapshot otherwise.
func (r *Ring) Len() int {
	w := r.w.Load()
	pos := r.r.Load()
	if d := r.drop.Load(); d > pos {
		pos = d
	}
	if w < pos { // a concurrent consumer moved on between the loads
		return 0
	}
	return int(w - pos)
}

// Free is the number of samples Write would accept now. After a Reset the
// dropped samples' space comes back at the consumer's next Read.
func (r *Ring) Free() int {
	w := r.w.Load()
	return int(r.n - (w - r.r.Load()))
}

// Written is the number of samples ever accepted by Write: the position the
// next written sample will have in the stream.
func (r *Ring) Written() uint64 { return r.w.Load() }

// Consumed is the stream position of the next sample Read will return (the
// number of samples read or dropped so far).
func (r *Ring) Consumed() uint64 { return r.r.Load() }

// Reset drops every sample written so far and not yet read, e.g. when an
// utterance is cancelled or a new one should cut the old one off. Producer
// only; safe while the consumer runs: the consumer skips the dropped
// samples at its next Read (a Read already in progress may still return
// some of them).
func (r *Ring) Reset() {
	r.drop.Store(r.w.Load())
}
