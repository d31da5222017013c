package bench

import (
	"encoding/binary"
	"math"
	"strings"

	"zonostream/engine/dac"
	"zonostream/engine/weights"
)

// randomDAC makes a descript/dac_44khz-shaped checkpoint with random fp32
// weights (uniform ±√(3/fan_in), Snake α = 1, zero biases). Its audio is
// meaningless; its cost is the real decoder's.
func randomDAC(cfg dac.Config, seed uint64) (*weights.File, error) {
	shapes, err := dac.TensorShapes(cfg)
	if err != nil {
		return nil, err
	}
	s := seed*0x9E3779B97F4A7C15 + 7
	next := func() float32 {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		return float32(s>>40) / (1 << 24)
	}
	var ts []*weights.Tensor
	for name, shape := range shapes {
		n := 1
		for _, d := range shape {
			n *= d
		}
		fanIn := 1
		if len(shape) > 1 {
			fanIn = n / shape[0]
		}
		a := float32(math.Sqrt(3 / float64(fanIn)))
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			var v float32
			switch {
			case strings.HasSuffix(name, "alpha"):
				v = 1
			case strings.HasSuffix(name, "bias"):
				v = 0
			default:
				v = a * (2*next() - 1)
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		ts = append(ts, &weights.Tensor{Name: name, DType: weights.F32, Shape: shape, Data: data})
	}
	img, err := weights.Encode(ts, nil)
	if err != nil {
		return nil, err
	}
	return weights.Parse("random-dac", img)
}
