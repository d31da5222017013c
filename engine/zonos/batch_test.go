package zonos

import (
	"math"
	"path/filepath"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/cpu"
	"zonostream/engine/sample"
	"zonostream/internal/golden"
)

// batchPrefixes makes n prompts of the same length and different content.
func batchPrefixes(t *testing.T, m *Model, n int) []compute.Tensor {
	t.Helper()
	var ps []compute.Tensor
	for u := 0; u < n; u++ {
		ids := []int32{2, int32(10 + u), int32(20 + 3*u), int32(30 + u), 11, 3}
		p, _, err := m.Prefix(Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {float32(24 + u)}}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestBatchMatchesSingle: n utterances decoded as one Batch give, step by
// step, the guided logits each utterance gets from its own State
// (teacher-forced with different columns per utterance), on both
// backbones.
func TestBatchMatchesSingle(t *testing.T) {
	for _, variant := range []string{"hybrid", "transformer"} {
		t.Run(variant, func(t *testing.T) {
			dir := golden.Pack(t, "zonos-"+variant+"-tiny")
			m, err := Load(cpu.New(0), filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			const n, steps = 3, 6
			ps := batchPrefixes(t, m, n)
			mask := [][NumCodebooks]int32{{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}}
			b, err := m.NewBatch(ps, ps[0].Shape()[1]+steps+2, GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := b.Prefill(mask); err != nil {
				t.Fatal(err)
			}
			sts := make([]*State, n)
			for u := range sts {
				sts[u] = m.NewState(ps[0].Shape()[1] + steps + 2)
				if _, err := m.Prefill(sts[u], ps[u], mask, 2, nil); err != nil {
					t.Fatal(err)
				}
			}
			worst := 0.0
			for s := 0; s < steps; s++ {
				cols := make([][NumCodebooks]int32, n)
				for u := range cols {
					for k := range cols[u] {
						cols[u][k] = int32((s*131 + u*17 + k*7) % CodebookSize)
					}
				}
				got, err := b.Logits(cols)
				if err != nil {
					t.Fatal(err)
				}
				for u := range cols {
					want, err := m.Step(sts[u], cols[u], 2, nil)
					if err != nil {
						t.Fatal(err)
					}
					for i := range want {
						if math.IsInf(float64(want[i]), -1) != math.IsInf(float64(got[u][i]), -1) {
							t.Fatalf("step %d utterance %d logit %d: batch %g single %g", s, u, i, got[u][i], want[i])
						}
						if !math.IsInf(float64(want[i]), 0) {
							d := math.Abs(float64(got[u][i] - want[i]))
							worst = max(worst, d)
							if d > 1e-5*max(1, math.Abs(float64(want[i]))) {
								t.Fatalf("step %d utterance %d logit %d: batch %g single %g", s, u, i, got[u][i], want[i])
							}
						}
					}
				}
			}
			t.Logf("%d utterances × %d steps: max |batch − single| %.3g", n, steps, worst)
			if b.Pos() != sts[0].Pos() {
				t.Errorf("batch at position %d, single states at %d", b.Pos(), sts[0].Pos())
			}
		})
	}
}

// TestBatchSamplingReproducible: a batch's sampled tokens are codes in
// range and the same for the same seed; different prompts in one batch
// are independent rows (not all equal).
func TestBatchSamplingReproducible(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	m, err := Load(cpu.New(0), filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ps := batchPrefixes(t, m, 4)
	run := func() [][][]int32 {
		b, err := m.NewBatch(ps, ps[0].Shape()[1]+12, GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		mask := [NumCodebooks]int32{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}
		tok, err := b.Prefill([][NumCodebooks]int32{mask})
		if err != nil {
			t.Fatal(err)
		}
		out := [][][]int32{tok}
		hist := make([][][]int32, b.N())
		for u := range hist {
			hist[u] = make([][]int32, NumCodebooks)
		}
		for s := 0; s < 8; s++ {
			cols := make([][NumCodebooks]int32, b.N())
			for u := range cols {
				for k := range cols[u] {
					cols[u][k] = min(tok[u][k], CodebookSize-1)
					hist[u][k] = append(hist[u][k], cols[u][k])
				}
			}
			if tok, err = b.Step(cols, hist); err != nil {
				t.Fatal(err)
			}
			out = append(out, tok)
		}
		return out
	}
	a, c := run(), run()
	distinct := false
	for s := range a {
		for u := range a[s] {
			for k, v := range a[s][u] {
				if v < 0 || v > MASK {
					t.Fatalf("step %d utterance %d codebook %d: token %d", s, u, k, v)
				}
				if v != c[s][u][k] {
					t.Fatalf("step %d utterance %d codebook %d: %d then %d with the same seed", s, u, k, v, c[s][u][k])
				}
				if v != a[s][0][k] {
					distinct = true
				}
			}
		}
	}
	if !distinct {
		t.Error("every utterance of the batch drew the same tokens")
	}
}

// TestBatchRefusesMismatch: prompts of different lengths (lockstep) and
// empty or oversized batches are errors.
func TestBatchRefusesMismatch(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	m, err := Load(cpu.New(0), filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 10, 11, 3}, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		t.Fatal(err)
	}
	bb, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 10, 11, 12, 3}, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults()}
	if _, err := m.NewBatch([]compute.Tensor{a, bb}, 64, o); err == nil {
		t.Error("prompts of different lengths accepted")
	}
	if _, err := m.NewBatch(nil, 64, o); err == nil {
		t.Error("empty batch accepted")
	}
	many := make([]compute.Tensor, MaxBatch+1)
	for i := range many {
		many[i] = a
	}
	if _, err := m.NewBatch(many, 64, o); err == nil {
		t.Errorf("batch of %d accepted", len(many))
	}
}
