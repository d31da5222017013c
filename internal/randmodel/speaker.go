package randmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"zonostream/engine/compute"
	"zonostream/engine/speaker"
	"zonostream/engine/weights"
)

// Speaker builds a speaker model of stem width inPlanes and stage depths
// blocks (speaker.RealBlocks with 64 is the released ResNet293) with random
// weights: He-initialised convolutions, biases N(0, 0.05²), and BatchNorms
// that pass their input through (γ 1, β the convolution's bias, mean 0,
// variance 1 − ε), so the folded model holds the random values as drawn.
func Speaker(b compute.SpeakerBackend, inPlanes int, blocks [4]int, seed uint64) *speaker.Model {
	r := rand.New(rand.NewPCG(seed, 1))
	randn := func(n int, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * std)
		}
		return v
	}
	w, lda := checkpoint{}, checkpoint{}
	// conv adds a bias-free convolution and the BatchNorm after it.
	conv := func(name, bn string, cout, cin, k int) {
		w.add(name, randn(cout*cin*k*k, math.Sqrt(2/float64(cin*k*k))), cout, cin, k, k)
		w.batchNorm(bn, randn(cout, 0.05))
	}
	conv("front.conv1.weight", "front.bn1", inPlanes, 1, 3)
	cin := inPlanes
	for s := 0; s < 4; s++ {
		width := inPlanes << s
		for i := 0; i < blocks[s]; i++ {
			p := fmt.Sprintf("front.layer%d.%d.", s+1, i)
			stride := 1
			if s > 0 && i == 0 {
				stride = 2
			}
			conv(p+"conv1.weight", p+"bn1", width, cin, 3)
			conv(p+"conv2.weight", p+"bn2", width, width, 3)
			if stride != 1 || cin != width {
				conv(p+"downsample.0.weight", p+"downsample.1", width, cin, 1)
			}
			cin = width
		}
	}
	const att, embed, ldaDim = 128, 256, 128
	P := cin * speaker.NMels / 8
	w.add("pooling.attention.0.weight", randn(att*P, math.Sqrt(2/float64(P))), att, P, 1)
	w.add("pooling.attention.0.bias", randn(att, 0.05), att)
	w.batchNorm("pooling.attention.2", make([]float32, att))
	w.add("pooling.attention.3.weight", randn(P*att, math.Sqrt(2/float64(att))), P, att, 1)
	w.add("pooling.attention.3.bias", randn(P, 0.05), P)
	w.add("bottleneck.weight", randn(embed*2*P, 1/math.Sqrt(float64(2*P))), embed, 2*P)
	w.add("bottleneck.bias", randn(embed, 0.05), embed)
	lda.add("weight", randn(ldaDim*embed, 1/16.0), ldaDim, embed)
	lda.add("bias", randn(ldaDim, 0.05), ldaDim)
	m, err := speaker.New(w, lda, b)
	if err != nil {
		panic("randmodel: the random speaker checkpoint does not bind: " + err.Error())
	}
	return m
}

// checkpoint is a speaker.Checkpoint in memory.
type checkpoint map[string]*weights.Tensor

func (c checkpoint) add(name string, v []float32, shape ...int) {
	c[name] = weights.F32Tensor(name, shape, v)
}

// batchNorm adds an eval-mode BatchNorm that folds to y = x + beta: γ 1,
// mean 0 and variance 1 − ε, whose 1/√(var+ε) rounds every float32 weight
// it scales back to itself.
func (c checkpoint) batchNorm(prefix string, beta []float32) {
	n := len(beta)
	ones, zeros, vars := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range ones {
		ones[i], vars[i] = 1, 1-1e-5
	}
	c.add(prefix+".weight", ones, n)
	c.add(prefix+".bias", beta, n)
	c.add(prefix+".running_mean", zeros, n)
	c.add(prefix+".running_var", vars, n)
}

func (c checkpoint) Has(name string) bool { _, ok := c[name]; return ok }

func (c checkpoint) Tensor(name string) (*weights.Tensor, error) {
	t, ok := c[name]
	if !ok {
		return nil, fmt.Errorf("random speaker checkpoint: no tensor %q", name)
	}
	return t, nil
}

func (c checkpoint) Float32s(name string, want ...int) ([]float32, []int, error) {
	t, err := c.Tensor(name)
	if err != nil {
		return nil, nil, err
	}
	if want != nil && !slices.EqualFunc(want, t.Shape, func(w, s int) bool { return w < 0 || w == s }) {
		return nil, nil, fmt.Errorf("random speaker checkpoint: tensor %q has shape %v, want %v", name, t.Shape, want)
	}
	v, err := t.Float32s()
	return v, t.Shape, err
}
