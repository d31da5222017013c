package dac_test

import (
	"math"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/internal/golden"
)

// fieldModels are the decoders whose receptive field is measured: the
// golden tiny pack, dac_44khz's geometry with few channels, and (without
// -short) a randomly initialised full-size dac_44khz.
func fieldModels(t *testing.T) map[string]*dac.Model {
	t.Helper()
	be := cpu.New(0)
	ms := map[string]*dac.Model{}
	tiny, err := dac.Load(golden.Pack(t, "dac-tiny"), be)
	if err != nil {
		t.Fatal(err)
	}
	ms["dac-tiny"] = tiny
	ms["narrow-44k"] = randomModel(t, narrow44k(), be, 11)
	if !testing.Short() {
		ms["full-44k"] = randomModel(t, dac.Dac44kHz(), be, 12)
	}
	return ms
}

// TestReceptiveField perturbs one frame and measures how far the output
// changes to the left and right, and decodes an interior window to measure
// where its output starts and stops agreeing with one-shot decoding; both
// must equal what Field derives from the layers.
func TestReceptiveField(t *testing.T) {
	for name, m := range fieldModels(t) {
		t.Run(name, func(t *testing.T) {
			cfg := m.Config()
			f, hop := m.Field(), cfg.HopLength
			t.Logf("derived: left %d samples (%d frames), right tail %d samples (%d frames), reach before %d after %d",
				f.LeftSamples, f.LeftFrames, f.RightSamples, f.RightFrames, f.ReachBefore, f.ReachAfter)
			const T, f0 = 32, 16
			codes := randomCodes(cfg, T, 21)
			ref := decode(t, m, codes)
			sat := 0
			for _, v := range ref {
				if v > 0.999 || v < -0.999 {
					sat++
				}
			}
			t.Logf("one-shot audio: %d of %d samples beyond |0.999|", sat, len(ref))

			// A finite perturbation (other codes at frame f0): its farthest
			// effects pass through a single tap per layer and may round away,
			// so it can fall a few samples short of the structural reach.
			pert := make([][]int32, len(codes))
			for k := range codes {
				pert[k] = append([]int32(nil), codes[k]...)
				pert[k][f0] = (pert[k][f0] + 512) % int32(cfg.CodebookSize)
			}
			first, last := changed(ref, decode(t, m, pert))
			if first < 0 {
				t.Fatal("perturbing a frame changed nothing")
			}
			before, after := f0*hop-first, last+1-(f0+1)*hop
			t.Logf("measured (codes of frame %d changed): output changes from %d samples before the frame to %d after it", f0, before, after)
			if before > f.ReachBefore || after > f.ReachAfter || before < f.ReachBefore-hop/8 || after < f.ReachAfter-hop/8 {
				t.Errorf("perturbation reach measured %d before / %d after, derived %d / %d", before, after, f.ReachBefore, f.ReachAfter)
			}
			// A NaN in frame f0's latent reaches every sample that reads it,
			// whatever the weights: the structural reach, exactly.
			latent, err := m.FromCodes(codes)
			if err != nil {
				t.Fatal(err)
			}
			nanLat := append([]float32(nil), latent...)
			for c := 0; c < cfg.HiddenSize; c++ {
				nanLat[c*T+f0] = float32(math.NaN())
			}
			first, last = nanRange(m.DecodeLatent(nanLat, T))
			before, after = f0*hop-first, last+1-(f0+1)*hop
			t.Logf("measured (NaN in frame %d): output changes from %d samples before the frame to %d after it", f0, before, after)
			if before != f.ReachBefore || after != f.ReachAfter {
				t.Errorf("NaN reach measured %d before / %d after, derived %d / %d", before, after, f.ReachBefore, f.ReachAfter)
			}

			// An interior window [a, b) must agree with one-shot decoding bit
			// for bit on [a·hop+Left, b·hop−Right).
			const a, b = 3, 29
			win := make([][]int32, len(codes))
			for k := range codes {
				win[k] = codes[k][a:b]
			}
			w := decode(t, m, win)
			exactLo, exactHi := f.LeftSamples, (b-a)*hop-f.RightSamples
			for i := exactLo; i < exactHi; i++ {
				if w[i] != ref[a*hop+i] {
					t.Fatalf("window sample %d differs from one-shot inside the derived exact range [%d, %d)", i, exactLo, exactHi)
				}
			}
			// Tightness: with NaN in every frame outside [a, b), exactly the
			// samples of that range stay finite.
			for c := 0; c < cfg.HiddenSize; c++ {
				for t2 := 0; t2 < T; t2++ {
					if t2 < a || t2 >= b {
						latent[c*T+t2] = float32(math.NaN())
					}
				}
			}
			out := m.DecodeLatent(latent, T)
			flo, fhi := -1, -1
			for i, v := range out {
				if !math.IsNaN(float64(v)) {
					if flo < 0 {
						flo = i
					}
					fhi = i + 1
				}
			}
			t.Logf("measured (window %d..%d): left warm-up %d samples, right tail %d samples", a, b, flo-a*hop, b*hop-fhi)
			if flo-a*hop != f.LeftSamples || b*hop-fhi != f.RightSamples {
				t.Errorf("window exact range measured [%d, %d), derived [%d, %d)", flo, fhi, a*hop+f.LeftSamples, b*hop-f.RightSamples)
			}
		})
	}
}

// changed returns the first and last index where a and b differ (−1, −1
// when equal).
func changed(a, b []float32) (int, int) {
	first, last := -1, -1
	for i := range a {
		if a[i] != b[i] {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}

// nanRange returns the first and last NaN index.
func nanRange(x []float32) (int, int) {
	first, last := -1, -1
	for i, v := range x {
		if math.IsNaN(float64(v)) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last
}
