package audio

import (
	"math/rand/v2"
	"testing"
)

// TestResampleStreamMatchesResample feeds random inputs to a ResampleStream
// in randomly sized pieces (a piece may be empty or shorter than the filter)
// and checks that the output equals the one-shot Resample of the whole
// input bit for bit, and that after every piece the output is as complete
// as the input allows: every sample whose filter window has arrived is out,
// so output lags input by at most the window's reach (about Width input
// samples).
func TestResampleStreamMatchesResample(t *testing.T) {
	pairs := [][2]int{{44100, 24000}, {44100, 16000}, {44100, 48000}, {44100, 22050}, {44100, 8000},
		{24000, 44100}, {44100, 44099}, {3, 2}, {44100, 44100}}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range pairs {
		r, err := NewResampler(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		s := r.Stream()
		for trial := range 4 {
			n := rng.IntN(30000)
			if trial == 0 {
				n = rng.IntN(20) // shorter than one filter window
			}
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(rng.NormFloat64() * 0.3)
			}
			want := r.Resample(src)
			var got []float32
			for at := 0; at < n; {
				k := min(n-at, rng.IntN(3)*rng.IntN(2000))
				got = s.Write(got, src[at:at+k])
				at += k
				if p[0] == p[1] {
					if len(got) != at {
						t.Fatalf("%d→%d: %d samples out after %d in", p[0], p[1], len(got), at)
					}
					continue
				}
				if m := len(got); m < r.OutLen(at) && r.windowEnd(m) <= at {
					t.Fatalf("%d→%d: after %d samples in, output %d is held back although its window ends at %d", p[0], p[1], at, m, r.windowEnd(m))
				}
				if lag := at - len(got)*p[0]/p[1]; len(got) < r.OutLen(at) && lag > r.width+6 {
					t.Fatalf("%d→%d: output lags input by %d samples, over width %d + 6", p[0], p[1], lag, r.width)
				}
			}
			got = s.Flush(got)
			if len(got) != len(want) {
				t.Fatalf("%d→%d, %d samples in: %d out, want %d", p[0], p[1], n, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%d→%d, %d samples in: sample %d is %v, one-shot %v", p[0], p[1], n, i, got[i], want[i])
				}
			}
		}
	}
}
