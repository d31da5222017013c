package randmodel

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"zonostream/engine/compute"
	"zonostream/engine/dac"
	"zonostream/engine/weights"
)

// DAC returns a checkpoint of cfg's shapes (dac.TensorShapes) whose
// tensors are made on demand, with the golden packs' random init
// (golden/dac-tiny/io.json "init"): conv weights N(0, 1/fan_in), biases
// N(0, 0.05²), Snake α U(0.5, 2), codebooks N(0, 1); decoder.conv2 is
// scaled by 2⁻⁸ as in the pack, which keeps the final tanh out of
// saturation. Each tensor's values depend only on the seed and its name.
func DAC(cfg dac.Config, seed uint64) (dac.Source, error) {
	shapes, err := dac.TensorShapes(cfg)
	if err != nil {
		return nil, err
	}
	s := &dacSource{seed: seed, shapes: shapes}
	for n := range shapes {
		s.names = append(s.names, n)
	}
	sort.Strings(s.names)
	return s, nil
}

// dacSource is DAC's checkpoint.
type dacSource struct {
	seed   uint64
	shapes map[string][]int
	names  []string
}

func (s *dacSource) Names() []string { return s.names }

func (s *dacSource) Tensor(name string) (*weights.Tensor, error) {
	shape, ok := s.shapes[name]
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewPCG(s.seed, h.Sum64()))
	v := make([]float32, compute.NumElements(shape))
	switch {
	case strings.HasSuffix(name, ".alpha"):
		for i := range v {
			v[i] = float32(0.5 + 1.5*r.Float64())
		}
	case strings.HasSuffix(name, ".bias"):
		for i := range v {
			v[i] = float32(0.05 * r.NormFloat64())
		}
	case strings.HasSuffix(name, "codebook.weight"):
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	default: // conv weights: fan_in = in channels · kernel
		fanIn := shape[1] * shape[2]
		if strings.Contains(name, "conv_t1") {
			fanIn = shape[0] * shape[2]
		}
		std := 1 / math.Sqrt(float64(fanIn))
		if name == "decoder.conv2.weight" {
			std /= 256
		}
		for i := range v {
			v[i] = float32(std * r.NormFloat64())
		}
	}
	return weights.F32Tensor(name, shape, v), nil
}
