package cpu

import (
	"math"
	"testing"

	"zonostream/engine/compute"
)

// TestAttentionWithoutRotary: RotaryDim 0 (mamba_ssm MHA with
// rotary_emb_dim = 0) applies no rotation: the result is plain causal GQA
// attention, and rotary over the whole head changes it.
func TestAttentionWithoutRotary(t *testing.T) {
	b := New(1)
	const T, H, Dh = 3, 2, 4
	vals := func(n int, seed float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = seed * float32((i*7)%5-2)
		}
		return v
	}
	qv, kv, vv := vals(T*H*Dh, 0.3), vals(T*Dh, 0.7), vals(T*Dh, 1.1)
	run := func(dr int) []float32 {
		s := compute.AttentionSpec{Heads: H, KVHeads: 1, HeadDim: Dh, RotaryBase: 10000, Rotary: compute.RotaryHalves, RotaryDim: dr}
		kc, vc := b.Zeros(1, 8, 1, Dh), b.Zeros(1, 8, 1, Dh)
		var qkv []float32 // [1, T, (H+2)·Dh]: q, k, v of each position
		for t := 0; t < T; t++ {
			qkv = append(append(append(qkv, qv[t*H*Dh:][:H*Dh]...), kv[t*Dh:][:Dh]...), vv[t*Dh:][:Dh]...)
		}
		return b.ReadF32(b.Attention(b.FromF32(qkv, 1, T, (H+2)*Dh), kc, vc, compute.Positions{}, s))
	}
	// Plain causal attention, both query heads sharing the one KV head.
	want := make([]float32, T*H*Dh)
	for tq := 0; tq < T; tq++ {
		for h := 0; h < H; h++ {
			q := qv[(tq*H+h)*Dh:][:Dh]
			w := make([]float64, tq+1)
			var den float64
			for j := 0; j <= tq; j++ {
				var d float64
				for i := 0; i < Dh; i++ {
					d += float64(q[i] * kv[j*Dh+i])
				}
				w[j] = math.Exp(d / 2)
				den += w[j]
			}
			for i := 0; i < Dh; i++ {
				var o float64
				for j := 0; j <= tq; j++ {
					o += w[j] / den * float64(vv[j*Dh+i])
				}
				want[(tq*H+h)*Dh+i] = float32(o)
			}
		}
	}
	got := run(0)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-5 {
			t.Fatalf("no rotary: output %d = %g, plain attention %g", i, got[i], want[i])
		}
	}
	rot := run(Dh)
	differs := false
	for i := range want {
		differs = differs || math.Abs(float64(rot[i]-want[i])) > 1e-5
	}
	if !differs {
		t.Fatal("rotary over the whole head changed nothing")
	}
}
