package speaker

import (
	"math"
	"math/rand/v2"

	"zonostream/engine/compute"
)

// RealBlocks is the released ResNet293's stage depths (64 input planes).
var RealBlocks = [4]int{10, 20, 64, 3}

// RandomModel builds a speaker model of the given width and depths with
// random weights (He-initialised convolutions): benchmarks and real-shape
// tests without the real checkpoint.
func RandomModel(b compute.SpeakerBackend, inPlanes int, blocks [4]int, seed uint64) *Model {
	r := rand.New(rand.NewPCG(seed, 1))
	randn := func(n int, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * std)
		}
		return v
	}
	mk := func(cout, cin, k int, spec compute.Conv2dSpec) conv {
		return conv{b.FromF32(randn(cout*cin*k*k, math.Sqrt(2/float64(cin*k*k))), cout, cin, k, k), b.FromF32(randn(cout, 0.05), cout), spec}
	}
	m := &Model{b: b, Config: Config{InPlanes: inPlanes, Blocks: blocks, Embed: 256, LDA: 128}}
	m.stem = mk(inPlanes, 1, 3, compute.Conv2dSpec{Padding: 1, ReLU: true})
	cin := inPlanes
	for s := 0; s < 4; s++ {
		w := inPlanes << s
		m.Config.Widths[s] = w
		for i := 0; i < blocks[s]; i++ {
			st := 1
			if s > 0 && i == 0 {
				st = 2
			}
			blk := block{c1: mk(w, cin, 3, compute.Conv2dSpec{Stride: st, Padding: 1, ReLU: true}), c2: mk(w, w, 3, compute.Conv2dSpec{Padding: 1})}
			if st != 1 || cin != w {
				d := mk(w, cin, 1, compute.Conv2dSpec{Stride: st})
				blk.down = &d
			}
			m.stages[s] = append(m.stages[s], blk)
			cin = w
		}
	}
	P := cin * NMels / 8
	m.Config.PoolIn = P
	m.att1 = mk(128, P, 1, compute.Conv2dSpec{ReLU: true})
	m.att2 = mk(P, 128, 1, compute.Conv2dSpec{})
	m.bnW, m.bnB = b.FromF32(randn(256*2*P, 1/math.Sqrt(float64(2*P))), 256, 2*P), b.FromF32(randn(256, 0.05), 256)
	m.ldaW, m.ldaB = b.FromF32(randn(128*256, 1/16.0), 128, 256), b.FromF32(randn(128, 0.05), 128)
	return m
}
