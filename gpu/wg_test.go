//go:build cuda

package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestWgLinear: Linear on tc_wg (Hopper, ≥ wgMinRows rows) agrees with the
// CPU as closely as tc_wbf does (the same products of two BF16 parts,
// added in another order), on the prefill shapes (one tile over all of k,
// and split k for the narrow outputs), a long prefix, and ragged M, N and
// k (a partial 64-wide k step); and the bias lands once, split or not.
func TestWgLinear(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("tc_wg needs Hopper")
	}
	r := rand.New(rand.NewPCG(41, 42))
	defer func(v bool) { wgOff = v }(wgOff)
	for _, c := range []struct {
		m, k, n int
		bias    bool
	}{{160, 2048, 8512, false}, {160, 4096, 2048, true}, {160, 8192, 2048, false}, {96, 2048, 3072, true},
		{1000, 2048, 2048, false}, {90, 2048, 8512, false}, {48, 4096, 2048, true}, {200, 264, 200, true}, {131, 72, 136, true}} {
		v := randVals(r, c.m*c.k, 1)
		for i := range v {
			v[i] *= float32(math.Exp2(float64(r.IntN(16) - 8))) // 2⁻⁸ … 2⁷
		}
		x := fromF32(v, c.m, c.k)
		w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(c.k)), c.n, c.k)
		var bc, bg compute.Tensor
		if c.bias {
			b := fromF32(randVals(r, c.n, 1), c.n)
			bc, bg = b.c, b.g
		}
		ref := cb.ReadF32(cb.Linear(x.c, w.c, bc))
		errOf := func(off bool) float64 {
			wgOff = off
			before := gb.k["tc_wg"].launches
			got := gb.ReadF32(gb.Linear(x.g, w.g, bg))
			if ran := gb.k["tc_wg"].launches > before; ran == off {
				t.Fatalf("M%d K%d N%d: tc_wg ran %v with ZONOS_TC_WG off %v", c.m, c.k, c.n, ran, off)
			}
			maxd, maxr, _ := diff(ref, got)
			return maxd / math.Max(1, maxr)
		}
		wbf, wg := errOf(true), errOf(false)
		splits, _ := wgSplits(c.k, c.m, c.n, gb.sms)
		t.Logf("M%d K%d N%d (%d splits): max|Δ|/max|ref| tc_wg %.3g, tc_wbf %.3g", c.m, c.k, c.n, splits, wg, wbf)
		if !(wg <= 2*wbf+2e-6) {
			t.Errorf("M%d K%d N%d: tc_wg error %.3g against tc_wbf's %.3g", c.m, c.k, c.n, wg, wbf)
		}
	}
}

// TestLayerNormParts: a prefill's LayerNorm writes its output's BF16
// parts, and the tc_wg projection that follows reads them instead of
// running bf16_parts, with bit-identical results; through a reshaped view
// as well; and a write into the output in place (CopyInto) drops them, so
// the projection splits the new values itself.
func TestLayerNormParts(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("tc_wg needs Hopper")
	}
	defer func(v bool) { lnPartsOff = v }(lnPartsOff)
	r := rand.New(rand.NewPCG(43, 44))
	const m, d, n = 160, 2048, 3072
	x := fromF32(randVals(r, m*d, 2), 2, m/2, d)
	lw := randW(t, r, compute.F32, 1, d)
	w := randW(t, r, compute.BF16, 1/math.Sqrt(d), n, d)
	parts := gb.k["bf16_parts"]
	project := func(off bool) ([]float32, int) {
		lnPartsOff = off
		y := gb.LayerNorm(x.g, lw.g, nil, 1e-5)
		before := parts.launches
		out := gb.ReadF32(gb.Linear(gb.Reshape(y, m, d), w.g, nil))
		return out, parts.launches - before
	}
	with, splits := project(false)
	without, splitsOff := project(true)
	if splits != 0 || splitsOff != 1 {
		t.Fatalf("bf16_parts ran %d times after a LayerNorm writing parts, %d without; want 0 and 1", splits, splitsOff)
	}
	for i := range with {
		if with[i] != without[i] {
			t.Fatalf("output %d: %g from the LayerNorm's parts, %g from bf16_parts (want bit-identical)", i, with[i], without[i])
		}
	}
	lnPartsOff = false
	y := gb.LayerNorm(x.g, lw.g, nil, 1e-5)
	z := fromF32(randVals(r, m*d, 1), 2, m/2, d)
	gb.CopyInto(y, 0, 0, z.g)
	before := parts.launches
	got := gb.ReadF32(gb.Linear(gb.Reshape(y, m, d), w.g, nil))
	if parts.launches-before != 1 {
		t.Fatalf("after CopyInto the projection ran bf16_parts %d times, want 1", parts.launches-before)
	}
	want := gb.ReadF32(gb.Linear(gb.Reshape(z.g, m, d), w.g, nil))
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after CopyInto, output %d: %g, want %g", i, got[i], want[i])
		}
	}
}
