package zonos

import (
	"math"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
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

// joinAll makes a batch of len(ps) slots for maxLen positions and joins
// prompt u into slot u after an all-MASK column, with o for every slot.
func joinAll(t *testing.T, m *Model, ps []compute.Tensor, maxLen int, o GenerateOptions) (*Batch, [][]int32) {
	t.Helper()
	b, err := m.NewBatch(len(ps), maxLen)
	if err != nil {
		t.Fatal(err)
	}
	var toks [][]int32
	for u, p := range ps {
		tok, err := b.Join(u, p, [][NumCodebooks]int32{maskColumn()}, o)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	return b, toks
}

func maskColumn() [NumCodebooks]int32 {
	return [NumCodebooks]int32{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}
}

// teacherColumns are the columns teacher-forced into n slots at step s.
func teacherColumns(s, n int) [][NumCodebooks]int32 {
	cols := make([][NumCodebooks]int32, n)
	for u := range cols {
		for k := range cols[u] {
			cols[u][k] = int32((s*131 + u*17 + k*7) % CodebookSize)
		}
	}
	return cols
}

// matchLogits fails t unless a batch's guided logits for slot u at step s
// equal a single state's within 1e-5 relative (the same −inf cells), and
// returns the largest difference.
func matchLogits(t *testing.T, s, u int, got, want []float32) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step %d slot %d: %d logits from the batch, %d from the single state", s, u, len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		if math.IsInf(float64(want[i]), -1) != math.IsInf(float64(got[i]), -1) {
			t.Fatalf("step %d slot %d logit %d: batch %g single %g", s, u, i, got[i], want[i])
		}
		if !math.IsInf(float64(want[i]), 0) {
			d := math.Abs(float64(got[i] - want[i]))
			worst = max(worst, d)
			if d > 1e-5*max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("step %d slot %d logit %d: batch %g single %g", s, u, i, got[i], want[i])
			}
		}
	}
	return worst
}

// TestBatchMatchesSingle: n utterances decoded as one Batch give, step by
// step, the guided logits each utterance gets from its own State
// (teacher-forced with different columns per utterance), on both
// backbones.
func TestBatchMatchesSingle(t *testing.T) {
	for _, variant := range []string{"hybrid", "transformer"} {
		t.Run(variant, func(t *testing.T) {
			m := loadTinyVariant(t, variant)
			const n, steps = 3, 6
			ps := batchPrefixes(t, m, n)
			mask := [][NumCodebooks]int32{{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}}
			b, _ := joinAll(t, m, ps, ps[0].Shape()[1]+steps+2, GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 5})
			defer b.Close()
			sts := make([]*State, n)
			for u := range sts {
				sts[u] = m.NewState(ps[0].Shape()[1] + steps + 2)
				if _, err := m.Prefill(sts[u], ps[u], mask, 2, nil); err != nil {
					t.Fatal(err)
				}
			}
			worst := 0.0
			for s := 0; s < steps; s++ {
				cols := teacherColumns(s, n)
				got, err := b.Logits(cols)
				if err != nil {
					t.Fatal(err)
				}
				for u := range cols {
					want, err := m.Step(sts[u], cols[u], 2, nil)
					if err != nil {
						t.Fatal(err)
					}
					worst = max(worst, matchLogits(t, s, u, got[u], want))
				}
			}
			t.Logf("%d utterances × %d steps: max |batch − single| %.3g", n, steps, worst)
			if b.PosOf(0) != sts[0].Pos() {
				t.Errorf("batch at position %d, single states at %d", b.PosOf(0), sts[0].Pos())
			}
		})
	}
}

// TestBatchSamplingReproducible: a batch's sampled tokens are codes in
// range and the same for the same seed; different prompts in one batch
// are independent rows (not all equal).
func TestBatchSamplingReproducible(t *testing.T) {
	m := loadTiny(t)
	ps := batchPrefixes(t, m, 4)
	run := func() [][][]int32 {
		b, tok := joinAll(t, m, ps, ps[0].Shape()[1]+12, GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 9})
		defer b.Close()
		var err error
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

// TestBatchRefusesMismatch: empty or oversized batches, prompts of the
// wrong width or without room for a step, and a noise source are errors.
func TestBatchRefusesMismatch(t *testing.T) {
	m := loadTiny(t)
	a, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 10, 11, 3}, Values: map[string][]float32{"language_id": {24}}})
	if err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults()}
	for _, n := range []int{0, MaxBatch + 1} {
		if _, err := m.NewBatch(n, 64); err == nil {
			t.Errorf("batch of %d accepted", n)
		}
	}
	if _, err := m.NewBatch(2, 1); err == nil {
		t.Error("a batch of 1 position accepted")
	}
	b, err := m.NewBatch(2, a.Shape()[1]+1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mask := [][NumCodebooks]int32{maskColumn()}
	if _, err := b.Join(0, m.Backend().Zeros(2, 3, 5), mask, o); err == nil {
		t.Error("a prompt of the wrong width accepted")
	}
	if _, err := b.Join(0, a, mask, o); err == nil {
		t.Error("a prompt without room for a step accepted")
	}
	big, err := m.NewBatch(2, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	noisy := o
	noisy.Noise = sample.NewPhilox(1)
	if _, err := big.Join(0, a, mask, noisy); err == nil {
		t.Error("a noise source accepted")
	}
	bad := o
	bad.Sampling.TopP = 2
	if _, err := big.Join(0, a, mask, bad); err == nil {
		t.Error("top-p 2 accepted")
	}
}

// TestBatchRaggedMatchesSingle: utterances at different positions — prompts
// of different lengths, one that leaves, and a new one that joins the
// freed slot mid-way — get, step by step, the guided logits each gets from
// its own State (teacher-forced), on both backbones; an empty slot yields
// nothing and a joined slot's position starts from its own prompt.
func TestBatchRaggedMatchesSingle(t *testing.T) {
	for _, variant := range []string{"hybrid", "transformer"} {
		t.Run(variant, func(t *testing.T) {
			m := loadTinyVariant(t, variant)
			prompt := func(n, salt int) compute.Tensor {
				ids := []int32{2}
				for i := 0; i < n; i++ {
					ids = append(ids, int32(10+(i*7+salt*5)%60))
				}
				p, _, err := m.Prefix(Inputs{PhonemeIDs: append(ids, 3), Values: map[string][]float32{"language_id": {float32(24 + salt)}}})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			const steps, maxLen = 8, 40
			ps := []compute.Tensor{prompt(3, 0), prompt(7, 1), prompt(5, 2)}
			mask := [][NumCodebooks]int32{{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}}
			o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults(), Seed: 5}
			b, _ := joinAll(t, m, ps, maxLen, o)
			defer b.Close()
			single := func(p compute.Tensor) *State {
				st := m.NewState(maxLen)
				if _, err := m.Prefill(st, p, mask, 2, nil); err != nil {
					t.Fatal(err)
				}
				return st
			}
			sts := []*State{single(ps[0]), single(ps[1]), single(ps[2])}
			for u, st := range sts {
				if b.PosOf(u) != st.Pos() {
					t.Fatalf("slot %d at position %d after prefill, its single state at %d", u, b.PosOf(u), st.Pos())
				}
			}
			joined := prompt(9, 3)
			worst := 0.0
			for s := 0; s < steps; s++ {
				switch s {
				case 3: // slot 1's utterance ends
					if err := b.Leave(1); err != nil {
						t.Fatal(err)
					}
					sts[1] = nil
				case 5: // a new, longer utterance takes slot 1
					if _, err := b.Join(1, joined, mask, o); err != nil {
						t.Fatal(err)
					}
					sts[1] = single(joined)
					if b.PosOf(1) != sts[1].Pos() || b.PosOf(0) == b.PosOf(1) {
						t.Fatalf("joined slot at %d, its single state at %d, slot 0 at %d", b.PosOf(1), sts[1].Pos(), b.PosOf(0))
					}
				}
				cols := teacherColumns(s, len(sts))
				got, err := b.Logits(cols)
				if err != nil {
					t.Fatal(err)
				}
				for u, st := range sts {
					if st == nil {
						if got[u] != nil || b.Active(u) {
							t.Fatalf("step %d: empty slot %d gave logits", s, u)
						}
						continue
					}
					want, err := m.Step(st, cols[u], 2, nil)
					if err != nil {
						t.Fatal(err)
					}
					worst = max(worst, matchLogits(t, s, u, got[u], want))
					if b.PosOf(u) != st.Pos() {
						t.Fatalf("step %d: slot %d at %d, its single state at %d", s, u, b.PosOf(u), st.Pos())
					}
				}
			}
			t.Logf("ragged batch, %d steps with a leave and a join: max |batch − single| %.3g", steps, worst)
		})
	}
}

// TestBatchSlotErrors: a slot is joined only when empty and in range, and
// a step needs an utterance somewhere.
func TestBatchSlotErrors(t *testing.T) {
	m := loadTiny(t)
	o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults()}
	b, err := m.NewBatch(2, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mask := [][NumCodebooks]int32{{MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK, MASK}}
	none := make([][NumCodebooks]int32, 2)
	if _, err := b.Step(none, make([][][]int32, 2)); err == nil {
		t.Error("a step with every slot empty was accepted")
	}
	p := batchPrefixes(t, m, 1)[0]
	if _, err := b.Join(2, p, mask, o); err == nil {
		t.Error("slot 2 of 2 accepted")
	}
	tok, err := b.Join(0, p, mask, o)
	if err != nil || len(tok) != NumCodebooks {
		t.Fatalf("join: %v %v", tok, err)
	}
	if _, err := b.Join(0, p, mask, o); err == nil {
		t.Error("a second utterance joined an occupied slot")
	}
	out, err := b.Step(none, [][][]int32{nil, nil})
	if err != nil || out[0] == nil || out[1] != nil {
		t.Fatalf("step with slot 1 empty: %v %v", out, err)
	}
	if b.PosOf(0) != p.Shape()[1]+2 || b.PosOf(1) != 0 {
		t.Errorf("positions %d, %d after a join and a step", b.PosOf(0), b.PosOf(1))
	}
}

// TestPaddedHistories: a device draw's windows are left-padded with −1 to
// the longest, an empty slot's are all −1, and no history at all is none.
func TestPaddedHistories(t *testing.T) {
	row := func(v ...int32) [][]int32 {
		h := make([][]int32, NumCodebooks)
		for k := range h {
			h[k] = append([]int32(nil), v...)
		}
		return h
	}
	got := paddedHistories([][][]int32{row(5, 6, 7), nil, row(9)})
	for k := 0; k < NumCodebooks; k++ {
		if !slices.Equal(got[0][k], []int32{5, 6, 7}) || !slices.Equal(got[1][k], []int32{-1, -1, -1}) || !slices.Equal(got[2][k], []int32{-1, -1, 9}) {
			t.Fatalf("codebook %d: %v %v %v", k, got[0][k], got[1][k], got[2][k])
		}
	}
	if paddedHistories([][][]int32{nil, nil}) != nil {
		t.Error("no history padded into one")
	}
}

// TestBatchTiersMatchSingle: as utterances join a batch of 8 slots one by
// one and then leave from the middle, the step's tier grows 1, 2, 4, 8
// and shrinks again, the last utterance moving into a leaver's rows; at
// every step each utterance's guided logits equal those of its own
// single State (teacher-forced).
func TestBatchTiersMatchSingle(t *testing.T) {
	m := loadTiny(t)
	const maxLen = 64
	ps := batchPrefixes(t, m, 6)
	o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults()}
	b, err := m.NewBatch(8, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mask := [][NumCodebooks]int32{maskColumn()}
	sts := make([]*State, 8)
	step := func(s int) {
		cols := teacherColumns(s, 8)
		got, err := b.Logits(cols)
		if err != nil {
			t.Fatal(err)
		}
		for u, st := range sts {
			if st == nil {
				if got[u] != nil {
					t.Fatalf("step %d: empty slot %d gave logits", s, u)
				}
				continue
			}
			want, err := m.Step(st, cols[u], 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			matchLogits(t, s, u, got[u], want)
		}
	}
	s := 0
	var tiers []int
	for u, slotID := range []int{3, 0, 5, 1, 7, 2} { // joins, a step after each
		if _, err := b.Join(slotID, ps[u], mask, o); err != nil {
			t.Fatal(err)
		}
		sts[slotID] = m.NewState(maxLen)
		if _, err := m.Prefill(sts[slotID], ps[u], mask, 2, nil); err != nil {
			t.Fatal(err)
		}
		tiers = append(tiers, b.Tier())
		step(s)
		s++
	}
	for _, slotID := range []int{0, 5, 7, 3} { // leaves from the middle and the end
		if err := b.Leave(slotID); err != nil {
			t.Fatal(err)
		}
		sts[slotID] = nil
		tiers = append(tiers, b.Tier())
		step(s)
		s++
	}
	if want := []int{1, 2, 4, 4, 8, 8, 8, 8, 8, 4}; !slices.Equal(tiers, want) {
		t.Errorf("tiers %v, want %v", tiers, want)
	}
	if b.Occupied() != 2 {
		t.Errorf("%d occupied, want 2", b.Occupied())
	}
}

// TestBatchAdoptsLongerState: a decoder whose state is longer than the
// batch's rows (the GPU's state pool hands out any state long enough) is
// adopted between two steps, and the batch goes on giving it the logits
// its own state would; one standing past the batch's positions is refused
// and left as it was.
func TestBatchAdoptsLongerState(t *testing.T) {
	m := loadTiny(t)
	const maxLen = 64
	ps := batchPrefixes(t, m, 2)
	o := GenerateOptions{CFGScale: 2, Sampling: sample.Defaults()}
	mask := [][NumCodebooks]int32{maskColumn()}
	b, err := m.NewBatch(2, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Join(0, ps[0], mask, o); err != nil {
		t.Fatal(err)
	}
	alone := m.NewState(maxLen) // slot 0's reference
	if _, err := m.Prefill(alone, ps[0], mask, 2, nil); err != nil {
		t.Fatal(err)
	}
	dec := m.NewDecoder(ps[1], 4*maxLen, o)
	defer dec.Close()
	ref := m.NewState(maxLen) // the decoder's reference
	if _, err := dec.Prefill(mask); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prefill(ref, ps[1], mask, 2, nil); err != nil {
		t.Fatal(err)
	}
	s := 0
	for ; s < 3; s++ { // slot 0 in the batch, the decoder alone
		cols := teacherColumns(s, 2)
		if _, err := b.Logits([][NumCodebooks]int32{cols[0], {}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Step(alone, cols[0], 2, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := dec.Step(cols[1], nil); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Step(ref, cols[1], 2, nil); err != nil {
			t.Fatal(err)
		}
	}
	short, err := m.NewBatch(2, dec.st.pos)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if err := short.Adopt(0, dec, o); err == nil {
		t.Fatalf("a batch of %d positions adopted a decoder at position %d", dec.st.pos, dec.st.pos)
	}
	if err := b.Adopt(1, dec, o); err != nil {
		t.Fatal(err)
	}
	for ; s < 8; s++ {
		cols := teacherColumns(s, 2)
		got, err := b.Logits(cols)
		if err != nil {
			t.Fatal(err)
		}
		for u, st := range []*State{alone, ref} {
			want, err := m.Step(st, cols[u], 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			matchLogits(t, s, u, got[u], want)
		}
	}
}
