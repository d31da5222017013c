package zonos

import (
	"path/filepath"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/internal/golden"
)

// runBackend is the CPU backend claiming compute.Mamba2Run: it records each
// run it is handed and runs the blocks one by one with the same ops the
// layers use, so a model on it must give exactly the logits of the plain
// backend; declines makes it decline every run (the caller's fallback).
type runBackend struct {
	compute.Backend
	runs     []int // blocks per run, in call order
	declines bool
}

func (r *runBackend) Mamba2Run(hidden, residual compute.Tensor, blocks []compute.Mamba2RunBlock, eps float32) (compute.Tensor, compute.Tensor, bool) {
	r.runs = append(r.runs, len(blocks))
	if r.declines {
		return nil, nil, false
	}
	for _, bl := range blocks {
		x, res := r.AddLayerNorm(hidden, residual, bl.NormW, bl.NormB, eps)
		zx := r.Linear(x, bl.InProj, nil)
		y := r.Mamba2(zx, bl.W, bl.ConvState, bl.SSMState, bl.Spec)
		hidden, residual = r.Linear(y, bl.OutProj, nil), res
	}
	return hidden, residual, true
}

// TestBackboneMamba2Runs: a decode step hands each run of consecutive
// Mamba2 blocks without an MLP to a backend with compute.Mamba2Run, whole
// (the tiny hybrid's attention layers 0 and 3 leave runs of 2 and 1),
// and the prefill and layer-hooked steps do not; the logits are exactly
// the plain backend's, whether the backend takes the runs or declines them.
func TestBackboneMamba2Runs(t *testing.T) {
	dir := golden.Pack(t, "zonos-hybrid-tiny")
	logits := func(b compute.Backend) [][]float32 {
		m, err := Load(b, filepath.Join(dir, "config.json"), filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		prefix, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 10, 11, 12, 3}, Values: map[string][]float32{"language_id": {24}}})
		if err != nil {
			t.Fatal(err)
		}
		st := m.NewState(prefix.Shape()[1] + 8)
		mask := [NumCodebooks]int32{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}
		lg, err := m.Prefill(st, prefix, [][NumCodebooks]int32{mask}, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := [][]float32{lg}
		for s := 0; s < 4; s++ {
			col := mask
			for k := range col {
				col[k] = int32((s*37 + k*11) % 1024)
			}
			var hook LayerHook
			if s == 3 {
				hook = func(int, compute.Tensor) {} // a hooked step goes block by block
			}
			lg, err := m.Step(st, col, 2, hook)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lg)
		}
		return out
	}
	want := logits(cpu.New(1))
	for _, declines := range []bool{false, true} {
		rb := &runBackend{Backend: cpu.New(1), declines: declines}
		got := logits(rb)
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("declines %v: logits of call %d differ from the plain backend's", declines, i)
			}
		}
		// Three unhooked steps, each with a run of layers 1–2 and one of layer 4.
		if wantRuns := []int{2, 1, 2, 1, 2, 1}; !slices.Equal(rb.runs, wantRuns) {
			t.Errorf("declines %v: runs handed to the backend %v, want %v", declines, rb.runs, wantRuns)
		}
	}
}
