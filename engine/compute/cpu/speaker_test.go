package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/compute"
)

// TestConv2dMatchesReference checks the unfolded kernel against the plain
// loop over the speaker model's geometries (3×3 pad 1 stride 1 and 2, 1×1
// stride 2, 1×1 on [B, C, 1, T]) and odd sizes around the 48-position tile
// and the 4-channel block.
func TestConv2dMatchesReference(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		B, Cin, Cout, H, W, K int
		s                     compute.Conv2dSpec
	}{
		{1, 1, 8, 80, 23, 3, compute.Conv2dSpec{Padding: 1, ReLU: true}},
		{1, 8, 16, 20, 13, 3, compute.Conv2dSpec{Padding: 1, Stride: 2}},
		{2, 8, 5, 9, 7, 1, compute.Conv2dSpec{Stride: 2}},
		{1, 7, 3, 1, 101, 1, compute.Conv2dSpec{ReLU: true}},
		{1, 3, 6, 5, 50, 3, compute.Conv2dSpec{Padding: 1}},
		{1, 2, 1, 1, 1, 3, compute.Conv2dSpec{Padding: 1}},
		{1, 4, 9, 4, 4, 3, compute.Conv2dSpec{Stride: 3}},
	} {
		t.Run(fmt.Sprintf("%v", tc), func(t *testing.T) {
			x := b.FromF32(randn(r, tc.B*tc.Cin*tc.H*tc.W), tc.B, tc.Cin, tc.H, tc.W)
			w := b.FromF32(randn(r, tc.Cout*tc.Cin*tc.K*tc.K), tc.Cout, tc.Cin, tc.K, tc.K)
			bias := b.FromF32(randn(r, tc.Cout), tc.Cout)
			for _, bb := range []compute.Tensor{bias, nil} {
				got := b.Conv2d(x, w, bb, tc.s)
				ref := b.conv2dRef(x, w, bb, tc.s)
				if !slices.Equal(got.Shape(), ref.Shape()) {
					t.Fatalf("shape %v, reference %v", got.Shape(), ref.Shape())
				}
				if e := relErr(cast(got).f32, cast(ref).f32); e > 1e-5 {
					t.Errorf("relative error %.3g > 1e-5", e)
				}
			}
		})
	}
}

// simamRef is the reference's SimAM in float32 with torch's operation order.
func simamRef(x, res []float32, C, HW int, lambda float32) []float32 {
	out := make([]float32, len(x))
	n := float32(HW - 1)
	for c := 0; c < C; c++ {
		p := x[c*HW : (c+1)*HW]
		var s float32
		for _, v := range p {
			s += v
		}
		mean := s / float32(HW)
		var ds float32
		for _, v := range p {
			ds += (v - mean) * (v - mean)
		}
		vv := ds / n
		for i, v := range p {
			d := (v - mean) * (v - mean)
			e := d/(4*(vv+lambda)) + 0.5
			y := v*float32(1/(1+math.Exp(-float64(e)))) + res[c*HW+i]
			out[c*HW+i] = max(y, 0)
		}
	}
	return out
}

func TestSimAMAddReLU(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(7, 8))
	for _, sh := range [][4]int{{1, 3, 4, 5}, {2, 8, 10, 13}, {1, 1, 1, 2}} {
		n := sh[0] * sh[1] * sh[2] * sh[3]
		xv, rv := randn(r, n), randn(r, n)
		got := b.ReadF32(b.SimAMAddReLU(b.FromF32(xv, sh[:]...), b.FromF32(rv, sh[:]...), 1e-4))
		ref := simamRef(xv, rv, sh[0]*sh[1], sh[2]*sh[3], 1e-4)
		if e := relErr(got, ref); e > 1e-5 {
			t.Errorf("%v: relative error %.3g > 1e-5", sh, e)
		}
	}
}

func TestAttentiveStatsPool(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(9, 10))
	B, C, T := 2, 5, 17
	xv, lv := randn(r, B*C*T), randn(r, B*C*T)
	// one constant channel: σ hits the clamp
	for i := 0; i < T; i++ {
		xv[i] = 0.25
	}
	got := b.ReadF32(b.AttentiveStatsPool(b.FromF32(xv, B, C, T), b.FromF32(lv, B, C, T), 1e-5))
	for bi := 0; bi < B; bi++ {
		for c := 0; c < C; c++ {
			row, lr := xv[(bi*C+c)*T:(bi*C+c+1)*T], lv[(bi*C+c)*T:(bi*C+c+1)*T]
			var z float64
			for _, l := range lr {
				z += math.Exp(float64(l))
			}
			var mu, s2 float64
			for i, x := range row {
				w := math.Exp(float64(lr[i])) / z
				mu += float64(x) * w
				s2 += float64(x) * float64(x) * w
			}
			sg := math.Sqrt(max(s2-mu*mu, 1e-5))
			gm, gs := float64(got[bi*2*C+c]), float64(got[bi*2*C+C+c])
			if math.Abs(gm-mu) > 1e-6 || math.Abs(gs-sg) > 1e-6 {
				t.Errorf("b%d c%d: got μ %g σ %g, want %g %g", bi, c, gm, gs, mu, sg)
			}
		}
	}
}
