package speaker

import (
	"math"
	"testing"

	"zonostream/internal/check"
	"zonostream/internal/golden"
)

func goldenFloats(t *testing.T, name string) []float32 {
	t.Helper()
	f := golden.Open(t, "speaker-tiny", "io.safetensors")
	tt, err := f.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tt.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindowAndFilterbankMatchTorchaudio(t *testing.T) {
	win := goldenFloats(t, "window")
	var d float64
	for i, v := range HannWindow() {
		d = max(d, math.Abs(v-float64(win[i])))
	}
	if d > 5e-7 { // torch builds the window in float32
		t.Errorf("window max |Δ| %.3g > 5e-7", d)
	}
	ref := goldenFloats(t, "melfb")
	fb := MelFilterbank(nFreqs, NMels, SampleRate)
	d = 0
	for k := range fb {
		for m := range fb[k] {
			d = max(d, math.Abs(fb[k][m]-float64(ref[k*NMels+m])))
		}
	}
	if d > 1e-5 { // float32 in torchaudio
		t.Errorf("mel filterbank max |Δ| %.3g > 1e-5", d)
	}
}

func TestLogMelMatchesGolden(t *testing.T) {
	wav := goldenFloats(t, "wav16k")
	ref := goldenFloats(t, "fbank")
	got, F, err := LogMel(wav)
	if err != nil {
		t.Fatal(err)
	}
	if F != 201 || len(got) != len(ref) {
		t.Fatalf("%d frames (%d values), want 201 (%d)", F, len(got), len(ref))
	}
	d, m := check.MaxAbsDiff(got, ref)
	tol := 1e-3 * max(1, m)
	t.Logf("fbank max |Δ| %.3g (max |ref| %.3g)", d, m)
	if d > tol {
		t.Errorf("fbank max |Δ| %.3g > %.3g", d, tol)
	}
}

func TestLogMelTooShort(t *testing.T) {
	if _, _, err := LogMel(make([]float32, 256)); err == nil {
		t.Error("256 samples: no error")
	}
	if _, F, err := LogMel(make([]float32, 257)); err != nil || F != 2 {
		t.Errorf("257 samples: %d frames, %v", F, err)
	}
}
