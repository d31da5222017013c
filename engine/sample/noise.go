package sample

import "math"

// Noise fills dst with independent Exp(1) draws (the q of argmax(p/q)).
type Noise interface {
	Exp(dst []float32)
}

// Philox is a counter-based generator (Philox4x32-10, Salmon et al. 2011):
// the stream is a pure function of (seed, counter), so a seeded run is
// reproducible and a GPU backend can produce the same stream in parallel.
type Philox struct {
	key     [2]uint32
	counter uint64
}

// NewPhilox seeds a generator.
func NewPhilox(seed uint64) *Philox {
	return &Philox{key: [2]uint32{uint32(seed), uint32(seed >> 32)}}
}

// Block returns the four 32-bit outputs for counter c under key k.
func PhiloxBlock(c uint64, k [2]uint32) [4]uint32 {
	x := [4]uint32{uint32(c), uint32(c >> 32), 0, 0}
	k0, k1 := k[0], k[1]
	for r := 0; r < 10; r++ {
		p0 := uint64(0xD2511F53) * uint64(x[0])
		p1 := uint64(0xCD9E8D57) * uint64(x[2])
		x = [4]uint32{uint32(p1>>32) ^ x[1] ^ k0, uint32(p1), uint32(p0>>32) ^ x[3] ^ k1, uint32(p0)}
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return x
}

// Seed and Counter say where the stream stands (a device sampler continues
// it exactly: compute.SamplerOps).
func (p *Philox) Seed() uint64    { return uint64(p.key[0]) | uint64(p.key[1])<<32 }
func (p *Philox) Counter() uint64 { return p.counter }

// Skip advances the stream past n values (what Exp(dst) with len(dst) = n
// consumes).
func (p *Philox) Skip(n int) { p.counter += uint64((n + 3) / 4) }

// Exp fills dst with −log(u), u uniform in (0, 1] from 24-bit mantissas.
func (p *Philox) Exp(dst []float32) {
	for i := 0; i < len(dst); i += 4 {
		b := PhiloxBlock(p.counter, p.key)
		p.counter++
		for j := 0; j < 4 && i+j < len(dst); j++ {
			u := (float64(b[j]>>8) + 1) / (1 << 24)
			dst[i+j] = float32(-math.Log(u))
		}
	}
}

// Fixed replays stored noise (the golden q tensors) in order.
type Fixed struct {
	Q   []float32
	pos int
}

// Exp copies the next len(dst) stored values; it panics when they run out,
// which in tests means the sampler drew more noise than the reference.
func (f *Fixed) Exp(dst []float32) {
	if f.pos+len(dst) > len(f.Q) {
		panic("sample.Fixed: stored noise exhausted")
	}
	copy(dst, f.Q[f.pos:])
	f.pos += len(dst)
}
