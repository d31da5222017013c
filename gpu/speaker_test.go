//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// TestSpeakerOps compares the speaker model's ops with engine/compute/cpu on the
// real model's shapes (ResNet293 on 80 mel bins) and odd ones.
func TestSpeakerOps(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(51, 52))
	type cs = compute.Conv2dSpec
	convs := []struct {
		b, cin, cout, h, w, k int
		s                     cs
		bias                  bool
		dt                    compute.DType
	}{
		{1, 1, 32, 80, 150, 3, cs{Padding: 1, ReLU: true}, true, compute.F32}, // stem
		{1, 32, 64, 80, 150, 3, cs{Padding: 1, Stride: 2, ReLU: true}, true, compute.F32},
		{1, 32, 64, 80, 150, 1, cs{Stride: 2}, true, compute.F32},                // downsample shortcut
		{1, 256, 256, 10, 19, 3, cs{Padding: 1, ReLU: true}, true, compute.F32},  // deep block
		{2, 128, 256, 20, 38, 3, cs{Padding: 1, Stride: 2}, false, compute.BF16}, // bf16, batch 2
		{1, 3, 5, 7, 4, 3, cs{Stride: 3}, true, compute.F32},
		{2, 7, 3, 1, 101, 1, cs{ReLU: true}, false, compute.F32},
		{1, 2, 1, 1, 1, 3, cs{Padding: 1}, true, compute.F16},
		{1, 5, 70, 9, 13, 2, cs{Padding: 2, Stride: 2, ReLU: true}, true, compute.F32},
	}
	for _, c := range convs {
		x := randF32(r, 1, c.b, c.cin, c.h, c.w)
		w := randW(t, r, c.dt, 1/math.Sqrt(float64(c.cin*c.k*c.k)), c.cout, c.cin, c.k, c.k)
		var bc, bg compute.Tensor
		if c.bias {
			b := randW(t, r, compute.F32, 0.1, c.cout)
			bc, bg = b.c, b.g
		}
		name := fmt.Sprintf("Conv2d B%d %d→%d %dx%d K%d %+v %v", c.b, c.cin, c.cout, c.h, c.w, c.k, c.s, c.dt)
		check(t, name, pair{cb.Conv2d(x.c, w.c, bc, c.s), gb.Conv2d(x.g, w.g, bg, c.s)}, tol)
	}
	for _, s := range [][4]int{{1, 32, 80, 150}, {2, 256, 10, 19}, {1, 3, 1, 2}, {1, 4, 7, 5}} {
		x := randF32(r, 1, s[:]...)
		res := randF32(r, 1, s[:]...)
		check(t, fmt.Sprintf("SimAMAddReLU %v", s), pair{cb.SimAMAddReLU(x.c, res.c, 1e-4), gb.SimAMAddReLU(x.g, res.g, 1e-4)}, tol)
	}
	for _, s := range [][3]int{{1, 2560, 150}, {2, 64, 1}, {3, 5, 777}} {
		x := randF32(r, 1, s[:]...)
		lg := randF32(r, 2, s[:]...)
		check(t, fmt.Sprintf("AttentiveStatsPool %v", s), pair{cb.AttentiveStatsPool(x.c, lg.c, 1e-5), gb.AttentiveStatsPool(x.g, lg.g, 1e-5)}, tol)
	}
}
