//go:build cuda

package gpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/compute"
)

// pendingPrefetch reads the lane's hint on the owner goroutine.
func pendingPrefetch(b *Backend) (r [2]pfRegion) {
	b.do(func() { r = b.prefetch })
	return r
}

// TestPrefetchNext: a hint is cut to the budget's even share per region,
// from each region's first row and to whole 16-byte units; the next
// decode-step attention takes it (and clears it), and its outputs and
// cache writes are bit for bit those of the same step without a hint.
// TestMamba2Run covers mamba_run's side (a hint on every other step).
func TestPrefetchNext(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("L2 bulk prefetch needs sm_90")
	}
	defer func(v int) { prefetchBudget = v }(prefetchBudget)
	r := rand.New(rand.NewPCG(7, 8))
	w := randW(t, r, compute.BF16, 0.1, 300, 2048).g // rows of 4096 bytes
	prefetchBudget = 1<<20 + 40
	gb.PrefetchNext(compute.CacheRegion{W: w, Hi: 150}, compute.CacheRegion{W: w, Lo: 150, Hi: 300})
	base := cast(w).ptr()
	want := [2]pfRegion{{base, (1<<20 + 40) / 2 &^ 15}, {base + 150*4096, (1<<20 + 40) / 2 &^ 15}}
	if got := pendingPrefetch(gb); got != want {
		t.Fatalf("hint %+v, want %+v", got, want)
	}
	prefetchBudget = 16 << 20
	gb.PrefetchNext(compute.CacheRegion{W: w, Lo: 290, Hi: 400}, compute.CacheRegion{W: randW(t, r, compute.F32, 1, 4, 4).g, Hi: 4})
	if got := pendingPrefetch(gb); got != [2]pfRegion{{base + 290*4096, 10 * 4096}, {}} {
		t.Fatalf("hint %+v: want rows 290…299 only (the region clipped, the F32 tensor skipped)", got)
	}

	// The hint rides on a decode step's attn_step: same outputs and cache.
	a := compute.AttentionSpec{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 64, Rotary: compute.RotaryHalves, RotaryBase: 10000}
	if !gb.attnStepFits(a.Heads, a.KVHeads, a.HeadDim) {
		t.Skip("attn_step does not take this shape here")
	}
	const B, maxT, pos = 2, 96, 40
	wd := (a.Heads + 2*a.KVHeads) * a.HeadDim
	kv := randVals(r, B*maxT*a.KVHeads*a.HeadDim, 1)
	var outs [2][]float32
	var caches [2][2][]float32
	qkv := randF32(r, 1, B, 1, wd).g
	for i := range 2 {
		kc, vc := gb.FromF32(kv, B, maxT, a.KVHeads, a.HeadDim), gb.FromF32(kv, B, maxT, a.KVHeads, a.HeadDim)
		if i == 1 {
			gb.PrefetchNext(compute.CacheRegion{W: w, Hi: 300})
		}
		o := gb.AttentionPacked(qkv, kc, vc, pos, nil, a)
		if p := pendingPrefetch(gb); p != ([2]pfRegion{}) {
			t.Fatalf("attention left the hint pending: %+v", p)
		}
		outs[i], caches[i] = gb.ReadF32(o), [2][]float32{gb.ReadF32(kc), gb.ReadF32(vc)}
	}
	if !slices.Equal(outs[0], outs[1]) || !slices.Equal(caches[0][0], caches[1][0]) || !slices.Equal(caches[0][1], caches[1][1]) {
		t.Error("attn_step with a prefetch hint differs from attn_step without one")
	}
}
