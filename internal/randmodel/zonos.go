package randmodel

import (
	"encoding/binary"
	"math"
	"strings"

	"zonostream/engine/weights"
	"zonostream/engine/zonos"
)

// Zonos makes a checkpoint of cfg's exact shapes (zonos.TensorShapes) with
// random bf16 values scaled so activations stay finite through every layer:
// uniform ±√(3/fan_in) for projections and heads, unit norms with zero
// biases, Mamba2 A and dt in their usual ranges. The values come from one
// stream seeded by seed, drawn in TensorShapes' order.
func Zonos(cfg *zonos.Config, seed uint64) (*weights.File, error) {
	g := &rng{s: seed*0x9E3779B97F4A7C15 + 1}
	var ts []*weights.Tensor
	for _, s := range zonos.TensorShapes(cfg) {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		fill := zonosInit(g, s)
		data := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(data[2*i:], uint16(math.Float32bits(fill())>>16))
		}
		ts = append(ts, &weights.Tensor{Name: s.Name, DType: weights.BF16, Shape: s.Shape, Data: data})
	}
	img, err := weights.Encode(ts, map[string]string{"format": "pt", "origin": "zonos-stream random init"})
	if err != nil {
		return nil, err
	}
	return weights.Parse("random-"+string(cfg.Variant()), img)
}

// zonosInit is the generator of one tensor's values, by its role.
func zonosInit(g *rng, s zonos.TensorShape) func() float32 {
	uniform := func(a float32) func() float32 { return func() float32 { return a * (2*g.float() - 1) } }
	name := s.Name
	switch {
	case strings.HasSuffix(name, ".bias"):
		return func() float32 { return 0 }
	case strings.HasSuffix(name, "norm.weight"), strings.HasSuffix(name, "norm2.weight"),
		strings.HasSuffix(name, "norm_f.weight"), strings.HasSuffix(name, "mixer.D"):
		return func() float32 { return 1 }
	case strings.HasSuffix(name, "uncond_vector"), strings.HasSuffix(name, "mixer.conv1d.weight"):
		return uniform(0.5)
	case strings.HasSuffix(name, "mixer.dt_bias"):
		// dt in [1e-3, 1e-1] through softplus⁻¹.
		return func() float32 {
			dt := math.Exp(math.Log(1e-3) + g.float64()*(math.Log(1e-1)-math.Log(1e-3)))
			return float32(dt + math.Log(-math.Expm1(-dt)))
		}
	case strings.HasSuffix(name, "mixer.A_log"):
		// A = −exp(A_log) in [−16, −1].
		return func() float32 { return float32(math.Log(1 + 15*g.float64())) }
	case strings.HasPrefix(name, "prefix_conditioner.conditioners.") && !strings.HasSuffix(name, "project.weight"),
		strings.HasPrefix(name, "embeddings."):
		// Embedding tables and Fourier projections.
		return uniform(1)
	default: // projections and heads: [out, in]
		return uniform(float32(math.Sqrt(3 / float64(s.Shape[1]))))
	}
}

// rng is a small xorshift generator (splitmix-seeded); fast enough to fill
// 1.6 B weights in seconds.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}

func (r *rng) float() float32   { return float32(r.next()>>40) / (1 << 24) }
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }
