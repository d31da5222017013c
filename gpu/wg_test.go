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
		errOf := func(got []float32) float64 {
			maxd, maxr, _ := diff(ref, got)
			return maxd / math.Max(1, maxr)
		}
		before := gb.k["tc_wg"].launches
		wg := errOf(gb.ReadF32(gb.Linear(x.g, w.g, bg)))
		if gb.k["tc_wg"].launches == before {
			t.Fatalf("M%d K%d N%d: Linear did not run tc_wg", c.m, c.k, c.n)
		}
		wbf := errOf(gb.ReadF32(linearWide("tc_wbf", x.g, w.g, bg)))
		splits, _ := wgSplits(c.k, c.m, c.n, gb.sms)
		t.Logf("M%d K%d N%d (%d splits): max|Δ|/max|ref| tc_wg %.3g, tc_wbf %.3g", c.m, c.k, c.n, splits, wg, wbf)
		if !(wg <= 2*wbf+2e-6) {
			t.Errorf("M%d K%d N%d: tc_wg error %.3g against tc_wbf's %.3g", c.m, c.k, c.n, wg, wbf)
		}
	}
}
