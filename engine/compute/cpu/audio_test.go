package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/compute"
)

func randn(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// closeTo reports the worst |got − ref| relative to max(1, max|ref|).
func relErr(got, ref []float32) float64 {
	var d, m float64
	for i := range ref {
		d = max(d, math.Abs(float64(got[i])-float64(ref[i])))
		m = max(m, math.Abs(float64(ref[i])))
	}
	return d / max(1, m)
}

// TestConv1dMatchesReference checks the blocked kernel against the plain
// loop over strides, paddings, dilations and channel counts that are not
// multiples of the 4-channel block.
func TestConv1dMatchesReference(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		B, Cin, Cout, T, K int
		s                  compute.Conv1dSpec
	}{
		{1, 3, 5, 17, 7, compute.Conv1dSpec{Padding: 3}},
		{2, 8, 6, 31, 7, compute.Conv1dSpec{Padding: 9, Dilation: 3}},
		{1, 16, 9, 40, 7, compute.Conv1dSpec{Padding: 27, Dilation: 9}},
		{1, 4, 8, 64, 16, compute.Conv1dSpec{Stride: 8, Padding: 4}},
		{1, 5, 3, 10, 1, compute.Conv1dSpec{}},
		{2, 7, 4, 9, 3, compute.Conv1dSpec{Padding: 1, Stride: 2}},
		{1, 1, 1, 1, 1, compute.Conv1dSpec{}},
		{1, 6, 4, 12, 3, compute.Conv1dSpec{Groups: 2, Padding: 1}},
	} {
		t.Run(fmt.Sprintf("%v", tc), func(t *testing.T) {
			x := b.FromF32(randn(r, tc.B*tc.Cin*tc.T), tc.B, tc.Cin, tc.T)
			g := max(tc.s.Groups, 1)
			w := b.FromF32(randn(r, tc.Cout*tc.Cin/g*tc.K), tc.Cout, tc.Cin/g, tc.K)
			bias := b.FromF32(randn(r, tc.Cout), tc.Cout)
			got := b.Conv1d(x, w, bias, tc.s)
			s := tc.s.Normalized()
			ref := b.conv1dRef(cast(x).f32, cast(x).shape, cast(w).f32, cast(w).shape, cast(bias).f32, s)
			if !slices.Equal(got.Shape(), ref.Shape()) {
				t.Fatalf("shape %v, reference %v", got.Shape(), ref.Shape())
			}
			if e := relErr(cast(got).f32, cast(ref).f32); e > 1e-5 {
				t.Errorf("relative error %.3g > 1e-5", e)
			}
		})
	}
}

// TestConvTranspose1dMatchesReference does the same for the transposed
// convolution, including the DAC decoder's (2s, s, ⌈s/2⌉) geometries.
func TestConvTranspose1dMatchesReference(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		B, Cin, Cout, T, K int
		s                  compute.Conv1dSpec
	}{
		{1, 8, 4, 5, 16, compute.Conv1dSpec{Stride: 8, Padding: 4}},
		{2, 6, 5, 9, 8, compute.Conv1dSpec{Stride: 4, Padding: 2}},
		{1, 5, 3, 13, 4, compute.Conv1dSpec{Stride: 2, Padding: 1}},
		{1, 3, 7, 4, 5, compute.Conv1dSpec{Stride: 3, Padding: 2, OutPadding: 1}},
		{1, 4, 4, 6, 3, compute.Conv1dSpec{}},
		{1, 2, 2, 3, 3, compute.Conv1dSpec{Dilation: 2}},
		{1, 1, 1, 1, 4, compute.Conv1dSpec{Stride: 2, Padding: 1}},
	} {
		t.Run(fmt.Sprintf("%v", tc), func(t *testing.T) {
			x := b.FromF32(randn(r, tc.B*tc.Cin*tc.T), tc.B, tc.Cin, tc.T)
			w := b.FromF32(randn(r, tc.Cin*tc.Cout*tc.K), tc.Cin, tc.Cout, tc.K)
			bias := b.FromF32(randn(r, tc.Cout), tc.Cout)
			got := b.ConvTranspose1d(x, w, bias, tc.s)
			s := tc.s.Normalized()
			ref := b.convTranspose1dRef(cast(x).f32, cast(x).shape, cast(w).f32, cast(w).shape, cast(bias).f32, s)
			if !slices.Equal(got.Shape(), ref.Shape()) {
				t.Fatalf("shape %v, reference %v", got.Shape(), ref.Shape())
			}
			if e := relErr(cast(got).f32, cast(ref).f32); e > 1e-5 {
				t.Errorf("relative error %.3g > 1e-5", e)
			}
		})
	}
}

// TestConvWindowBitExact checks the property the DAC streamer relies on:
// convolving a window of a signal gives bit-identical values, away from the
// window's edges, to convolving the whole signal.
func TestConvWindowBitExact(t *testing.T) {
	b := New(2)
	r := rand.New(rand.NewPCG(5, 6))
	const C, T, lo, hi = 6, 64, 20, 50
	xs := randn(r, C*T)
	win := make([]float32, C*(hi-lo))
	for c := 0; c < C; c++ {
		copy(win[c*(hi-lo):], xs[c*T+lo:c*T+hi])
	}
	full, part := b.FromF32(xs, 1, C, T), b.FromF32(win, 1, C, hi-lo)
	w := b.FromF32(randn(r, 5*C*7), 5, C, 7)
	spec := compute.Conv1dSpec{Padding: 9, Dilation: 3}
	a, p := cast(b.Conv1d(full, w, nil, spec)).f32, cast(b.Conv1d(part, w, nil, spec)).f32
	for co := 0; co < 5; co++ {
		for t2 := 9; t2 < hi-lo-9; t2++ {
			if a[co*T+lo+t2] != p[co*(hi-lo)+t2] {
				t.Fatalf("Conv1d channel %d position %d: window %v, whole %v", co, t2, p[co*(hi-lo)+t2], a[co*T+lo+t2])
			}
		}
	}
	wt := b.FromF32(randn(r, C*4*16), C, 4, 16)
	tspec := compute.Conv1dSpec{Stride: 8, Padding: 4}
	at, pt := cast(b.ConvTranspose1d(full, wt, nil, tspec)).f32, cast(b.ConvTranspose1d(part, wt, nil, tspec)).f32
	n := (hi - lo) * 8
	for co := 0; co < 4; co++ {
		for t2 := 16; t2 < n-16; t2++ {
			if at[co*T*8+lo*8+t2] != pt[co*n+t2] {
				t.Fatalf("ConvTranspose1d channel %d position %d: window %v, whole %v", co, t2, pt[co*n+t2], at[co*T*8+lo*8+t2])
			}
		}
	}
}

// BenchmarkConv1dDAC times the dac_44khz decoder's most expensive layer
// shape (a block-2 residual conv: 384 channels, kernel 7) and reports
// GFLOP/s.
func BenchmarkConv1dDAC(bm *testing.B) {
	b := New(0)
	r := rand.New(rand.NewPCG(7, 8))
	const C, T = 384, 512
	x := b.FromF32(randn(r, C*T), 1, C, T)
	w := b.FromF32(randn(r, C*C*7), C, C, 7)
	spec := compute.Conv1dSpec{Padding: 9, Dilation: 3}
	bm.ResetTimer()
	for range bm.N {
		b.Free(b.Conv1d(x, w, nil, spec))
	}
	bm.ReportMetric(2*C*C*7*T*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestSin32 checks Snake's sine against math.Sin, rounded to float32, over
// the range DAC activations reach: at most one float32 ulp apart.
func TestSin32(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	worst := 0.0
	for i := 0; i < 2_000_000; i++ {
		x := float64(float32((r.Float64()*2 - 1) * math.Pow(10, float64(i%6)-2)))
		got, want := float32(sin32(x)), float32(math.Sin(x))
		ulp := float64(math.Nextafter32(float32(math.Abs(float64(want))), 1) - float32(math.Abs(float64(want))))
		if d := math.Abs(float64(got)-float64(want)) / ulp; d > worst {
			worst = d
			if d > 1 {
				t.Fatalf("sin32(%v) = %v, math.Sin %v (%.1f ulp)", x, got, want, d)
			}
		}
	}
	t.Logf("worst difference %.0f float32 ulp", worst)
}
