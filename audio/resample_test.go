package audio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"zonostream/internal/check"
)

// TestResampleSparseMatchesDense checks, for assorted rate pairs (coprime,
// tiny, extreme ratios), that the convolution over the kept taps equals a
// plain convolution with torchaudio's full kernel bank: the skipped taps are
// negligible.
func TestResampleSparseMatchesDense(t *testing.T) {
	pairs := [][2]int{{3, 2}, {2, 3}, {1, 7}, {7, 1}, {4410, 4409}, {8000, 44100}, {44100, 8000},
		{96000, 44100}, {11025, 16000}, {16000, 22050}, {1000, 48000}, {48000, 1000}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range pairs {
		r, err := NewResampler(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		n := 3*r.orig + rng.IntN(500)
		if n > 100000 {
			n = 100000
		}
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 0.3)
		}
		got := r.Resample(src)
		want := denseResample(t, r, src)
		d, _ := check.MaxAbsDiff(got, want)
		if !(d <= 1e-6) {
			t.Errorf("%d→%d: sparse vs dense max|Δ| %.3g", p[0], p[1], d)
		}
	}
}

// denseResample is torchaudio's _apply_sinc_resample_kernel written out
// plainly: pad width zeros left and width+orig right, convolve every phase
// with stride orig, interleave, cut to the target length.
func denseResample(t *testing.T, r *Resampler, src []float32) []float32 {
	k, phases, taps, err := r.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	padded := make([]float64, r.width+len(src)+r.width+r.orig)
	for i, v := range src {
		padded[r.width+i] = float64(v)
	}
	blocks := (len(padded)-taps)/r.orig + 1
	out := make([]float32, 0, blocks*phases)
	for b := range blocks {
		for j := range phases {
			var acc float64
			for i := range taps {
				acc += float64(k[j*taps+i]) * padded[b*r.orig+i]
			}
			out = append(out, float32(acc))
		}
	}
	return out[:r.OutLen(len(src))]
}

func TestResampleSine(t *testing.T) {
	// A 440 Hz tone stays a 440 Hz tone away from the edges. The bound is
	// torchaudio's, not ours: with 6 zero crossings and rolloff 0.99 the
	// gain of each filter phase is off by up to ~2e-3 (measured 2.1e-3 for
	// 44100 → 44099).
	for _, p := range [][2]int{{24000, 44100}, {44100, 16000}, {44100, 44099}} {
		from, to := p[0], p[1]
		src := make([]float32, from/2)
		for i := range src {
			src[i] = float32(math.Sin(2 * math.Pi * 440 * float64(i) / float64(from)))
		}
		out, err := Resample(src, from, to)
		if err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i := to / 20; i < len(out)-to/20; i++ {
			want := math.Sin(2 * math.Pi * 440 * float64(i) / float64(to))
			worst = max(worst, math.Abs(float64(out[i])-want))
		}
		if worst > 3e-3 {
			t.Errorf("%d→%d: 440 Hz sine off by %.3g inside the signal", from, to, worst)
		}
	}
}

func TestResampleEdges(t *testing.T) {
	src := []float32{1, 2, 3}
	out, err := Resample(src, 16000, 16000)
	if err != nil || len(out) != 3 || out[2] != 3 {
		t.Fatalf("equal rates: %v %v, want a copy", out, err)
	}
	out[0] = 9
	if src[0] != 1 {
		t.Fatal("equal rates returned the input itself, want a copy")
	}
	if out, _ := Resample(nil, 24000, 44100); len(out) != 0 {
		t.Fatalf("empty input gives %d samples", len(out))
	}
	for _, p := range [][2]int{{0, 44100}, {44100, -1}, {MaxResampleRate + 1, 44100}} {
		_, err := NewResampler(p[0], p[1])
		if err == nil || !strings.Contains(err.Error(), "Hz") {
			t.Errorf("NewResampler(%d, %d): error %v, want one naming the rates", p[0], p[1], err)
		}
	}
	r, _ := NewResampler(24000, 44100)
	// torchaudio: ceil(147·n/80).
	for n, want := range map[int]int{1: 2, 80: 147, 81: 149, 12000: 22050} {
		if got := r.OutLen(n); got != want {
			t.Errorf("OutLen(%d) = %d, want %d", n, got, want)
		}
	}
	dst := make([]float32, r.OutLen(1000))
	src = make([]float32, 1000)
	// The taps the convolution skips all hold the clamped value, which the
	// Resampler's doc calls negligible.
	for _, p := range [][2]int{{24000, 44100}, {44100, 16000}, {7, 3}} {
		r, _ := NewResampler(p[0], p[1])
		if c := math.Abs(float64(r.clampValue)); c >= 1e-20 {
			t.Errorf("%d→%d: clamped tap %.3g, not negligible", p[0], p[1], c)
		}
	}
	big, _ := NewResampler(44100, 44099)
	if _, _, _, err := big.Kernel(); err == nil {
		t.Error("44100→44099: Kernel built a 1.9 G-value bank, want a refusal")
	}
	if out := big.Resample(make([]float32, 44100)); len(out) != 44099 {
		t.Errorf("44100→44099: %d samples from one second", len(out))
	}
	if a := testing.AllocsPerRun(10, func() { r.ResampleInto(dst, src) }); a != 0 {
		t.Errorf("ResampleInto allocates %.0f times", a)
	}
}

func BenchmarkResample(b *testing.B) {
	for _, p := range [][2]int{{24000, 44100}, {44100, 16000}, {48000, 44100}} {
		r, _ := NewResampler(p[0], p[1])
		src := make([]float32, p[0]) // one second
		for i := range src {
			src[i] = float32(math.Sin(float64(i)))
		}
		dst := make([]float32, r.OutLen(len(src)))
		b.Run(fmt.Sprintf("%d_to_%d", p[0], p[1]), func(b *testing.B) {
			b.SetBytes(int64(len(src) * 4))
			for b.Loop() {
				r.ResampleInto(dst, src)
			}
		})
	}
}

func BenchmarkNewResampler(b *testing.B) {
	for b.Loop() {
		NewResampler(44100, 16000)
	}
}
