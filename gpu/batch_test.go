//go:build cuda

package gpu

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestBatchOnGPU: a batch of utterances decoded on the GPU gives the CPU
// batch's guided logits (teacher-forced, per utterance), and its replayed
// batched step graph samples exactly the tokens of the same batch op by op,
// on both backbones: in lockstep (prompts of one length), and with the
// utterances at different positions — prompts of different lengths, a slot
// left and joined again mid-way — where the graph reads one position per
// utterance on the device and the eager step takes them from the host
// (compute.Positions.Rows). Under each plan: batches run on gemv_tc on
// Hopper, on gemv_m8 and the tiled GEMM elsewhere.
func TestBatchOnGPU(t *testing.T) { forEachPlan(t, testBatchOnGPU) }

func testBatchOnGPU(t *testing.T) {
	for _, pack := range []string{"zonos-hybrid-tiny", "zonos-transformer-tiny"} {
		t.Run(pack+"/lockstep", func(t *testing.T) { checkBatchOnGPU(t, pack, []int{4, 4, 4, 4, 4}, false) })
		t.Run(pack+"/ragged", func(t *testing.T) { checkBatchOnGPU(t, pack, []int{3, 7, 5, 4}, true) })
	}
}

// checkBatchOnGPU runs TestBatchOnGPU's checks for prompts of lens
// phonemes (plus BOS and EOS); with churn, slot 1 leaves before step 4 and
// a 9-phoneme prompt joins it before step 7.
func checkBatchOnGPU(t *testing.T, pack string, lens []int, churn bool) {
	p := golden.Pack(t, pack)
	load := func(b compute.Backend) *zonos.Model {
		m, err := zonos.Load(b, filepath.Join(p, "config.json"), filepath.Join(p, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mg, mc := load(gb), load(cpu.New(0))
	prompt := func(m *zonos.Model, n, salt int) compute.Tensor {
		ids := []int32{2}
		for i := 0; i < n; i++ {
			ids = append(ids, int32(10+(i*7+salt*5)%60))
		}
		pr, _, err := m.Prefix(zonos.Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {float32(24 + salt)}}})
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	n := len(lens)
	prompts := func(m *zonos.Model) []compute.Tensor {
		var ps []compute.Tensor
		for u, l := range lens {
			ps = append(ps, prompt(m, l, u))
		}
		return ps
	}
	const steps, maxLen = 12, 48
	mask := [][zonos.NumCodebooks]int32{{zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK, zonos.MASK}}
	o := zonos.GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 4}
	change := func(m *zonos.Model, b *zonos.Batch, s int) {
		switch {
		case !churn:
		case s == 4:
			if err := b.Leave(1); err != nil {
				t.Fatal(err)
			}
		case s == 7:
			if _, err := b.Join(1, prompt(m, 9, 7), mask, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	// newBatch joins every prompt, utterance u with seed o.Seed + u.
	newBatch := func(m *zonos.Model, o zonos.GenerateOptions) (*zonos.Batch, [][]int32) {
		b, err := m.NewBatch(n, maxLen)
		if err != nil {
			t.Fatal(err)
		}
		var toks [][]int32
		for u, p := range prompts(m) {
			ou := o
			ou.Seed += uint64(u)
			tok, err := b.Join(u, p, mask, ou)
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, tok)
		}
		return b, toks
	}
	bg, _ := newBatch(mg, o)
	bc, _ := newBatch(mc, o)
	defer bg.Close()
	defer bc.Close()
	worst := 0.0
	for s := 0; s < steps; s++ {
		change(mg, bg, s)
		change(mc, bc, s)
		cols := make([][zonos.NumCodebooks]int32, n)
		for u := range cols {
			for k := range cols[u] {
				cols[u][k] = int32((s*131 + u*17 + k*7) % zonos.CodebookSize)
			}
		}
		g, err := bg.Logits(cols)
		if err != nil {
			t.Fatal(err)
		}
		c, err := bc.Logits(cols)
		if err != nil {
			t.Fatal(err)
		}
		for u := range c {
			if (g[u] == nil) != (c[u] == nil) || bg.PosOf(u) != bc.PosOf(u) {
				t.Fatalf("step %d slot %d: gpu at %d (%d logits), cpu at %d (%d logits)", s, u, bg.PosOf(u), len(g[u]), bc.PosOf(u), len(c[u]))
			}
			for i := range c[u] {
				if math.IsInf(float64(c[u][i]), 0) {
					continue
				}
				d := math.Abs(float64(g[u][i] - c[u][i]))
				worst = max(worst, d)
				if d > 1e-4*max(1, math.Abs(float64(c[u][i]))) {
					t.Fatalf("step %d slot %d logit %d: gpu %g cpu %g", s, u, i, g[u][i], c[u][i])
				}
			}
		}
	}
	t.Logf("%d utterances × %d teacher-forced steps (churn %v): max |gpu − cpu| %.3g", n, steps, churn, worst)

	roll := func(eager bool) [][][]int32 {
		b, tok := newBatch(mg, o)
		defer b.Close()
		if eager {
			b.RunEager()
		}
		out := [][][]int32{tok}
		hist := make([][][]int32, n)
		for s := 0; s < steps; s++ {
			change(mg, b, s)
			cols := make([][zonos.NumCodebooks]int32, n)
			for u := range cols {
				if !b.Active(u) {
					hist[u] = nil
					continue
				}
				if hist[u] == nil {
					hist[u] = make([][]int32, zonos.NumCodebooks)
				}
				for k := range cols[u] {
					c := int32(zonos.MASK) // a slot joined since the last step
					if tok[u] != nil {
						c = min(tok[u][k], zonos.CodebookSize-1)
					}
					cols[u][k] = c
					hist[u][k] = append(hist[u][k], c)
				}
			}
			var err error
			if tok, err = b.Step(cols, hist); err != nil {
				t.Fatal(err)
			}
			out = append(out, tok)
		}
		return out
	}
	gr, ea := roll(false), roll(true)
	for s := range gr {
		for u := range gr[s] {
			if !slices.Equal(gr[s][u], ea[s][u]) {
				t.Fatalf("step %d slot %d: graph %v, eager %v", s, u, gr[s][u], ea[s][u])
			}
		}
	}
	t.Logf("%d utterances × %d sampled steps (churn %v): graph and eager tokens identical", n, steps, churn)
}
