//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"zonostream/engine/compute"
)

// rowBatch is n utterances' knobs for RowSamplerOps, each utterance
// taking a different sampler case, seed, counter, scale and pad column.
type rowBatch struct {
	n, W int
	rows []compute.RowParams
	name []string
}

// newRowBatch draws the knobs of n utterances over width W; variant
// shifts the cases so that successive batches mix them differently.
// When n ≥ 3, utterance n/2 is an empty slot.
func newRowBatch(r *rand.Rand, n, W, variant int) rowBatch {
	cases := samplerCases()
	b := rowBatch{n: n, W: W}
	for u := 0; u < n; u++ {
		c := cases[(7*u+3*variant+n)%len(cases)]
		counter := uint64(r.IntN(5000))
		if u%4 == 1 {
			counter += 1<<32 - 1000 // the counter's high word, and a carry out of the low one within the grid
		}
		b.rows = append(b.rows, compute.RowParams{Spec: toSpec(c.p), Seed: r.Uint64(), Counter: counter,
			Scale: float32(0.5 + 3*r.Float64()), PadFrom: W - r.IntN(3), Active: n < 3 || u != n/2})
		b.name = append(b.name, c.name)
	}
	return b
}

// words is the batch's params, I32 [n, RowParamWords] flat.
func (b rowBatch) words() []int32 {
	w := make([]int32, b.n*compute.RowParamWords)
	for u, p := range b.rows {
		compute.PutRowParams(w[u*compute.RowParamWords:], p)
	}
	return w
}

// guideOne is Guide over utterance u's rows of heads [2, 9n, W].
func (b rowBatch) guideOne(heads []float32, u, eos int, bias bool) []float32 {
	n9, W := 9*b.n, b.W
	one := slices.Concat(heads[9*u*W:9*(u+1)*W], heads[(n9+9*u)*W:(n9+9*(u+1))*W])
	p := b.rows[u]
	return gb.ReadF32(gb.Guide(gb.FromF32(one, 2, 9, W), p.Scale, p.PadFrom, eos, bias))
}

// sampleOne is what Sample draws for utterance u alone: its 9 rows of
// logits [9n, W] and history [9n, H] (nil: none), its spec, seed and
// counter.
func (b rowBatch) sampleOne(logits []float32, hist []int32, H, u int) []int32 {
	W := b.W
	var hg compute.Tensor
	if hist != nil {
		hg = gb.FromI32(slices.Clone(hist[9*u*H:9*(u+1)*H]), 9, H)
	}
	p := b.rows[u]
	lg := gb.FromF32(slices.Clone(logits[9*u*W:9*(u+1)*W]), 9, W)
	return gb.ReadI32(gb.Sample(lg, hg, nil, p.Spec, p.Seed, p.Counter))
}

// checkTokens compares SampleRows' tokens got [9n] with each active
// utterance's own Sample and expects zeros for the empty slots; it
// returns the number of utterances that differ.
func (b rowBatch) checkTokens(t *testing.T, what string, got []int32, logits []float32, hist []int32, H int) int {
	t.Helper()
	bad := 0
	for u, p := range b.rows {
		want := make([]int32, 9)
		if p.Active {
			want = b.sampleOne(logits, hist, H, u)
		}
		if g := got[9*u : 9*(u+1)]; !slices.Equal(g, want) {
			bad++
			t.Errorf("%s: utterance %d (%s, active %v, seed %d, counter %d): SampleRows %v, Sample alone %v",
				what, u, b.name[u], p.Active, p.Seed, p.Counter, g, want)
		}
	}
	return bad
}

// TestGuideRows: each utterance's rows of GuideRows are bit-identical to
// Guide over that utterance alone with its own scale and pad column.
func TestGuideRows(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(61, 62))
	const W, eos = 1026, 1024
	for _, n := range []int{1, 3, 17} {
		for _, bias := range []bool{false, true} {
			b := newRowBatch(r, n, W, 0)
			heads := randVals(r, 2*9*n*W, 4)
			got := gb.ReadF32(gb.GuideRows(gb.FromF32(heads, 2, 9*n, W), gb.FromI32(b.words(), n, compute.RowParamWords), eos, bias))
			bad := 0
			for u := 0; u < n; u++ {
				want := b.guideOne(heads, u, eos, bias)
				for i, v := range want {
					if math.Float32bits(v) != math.Float32bits(got[9*u*W+i]) {
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("GuideRows n %d bias %v: %d of %d values differ from Guide per utterance", n, bias, bad, len(got))
			} else {
				t.Logf("GuideRows n %d bias %v: %d values bit-identical", n, bias, len(got))
			}
		}
	}
}

// TestSampleRowsMatchesSample: with every utterance on its own knobs,
// window, seed and counter, SampleRows draws for each exactly what
// Sample draws for its nine rows alone, with and without history, and
// zeros for an empty slot.
func TestSampleRowsMatchesSample(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(63, 64))
	const W, H = 1026, 6
	total, bad := 0, 0
	for _, n := range []int{1, 3, 17} {
		for trial := 0; trial < 4; trial++ {
			b := newRowBatch(r, n, W, trial)
			logits := randVals(r, 9*n*W, []float64{1, 3, 8, 2}[trial])
			var hist []int32
			var hg compute.Tensor
			if trial != 2 {
				hist = samplerHistory(r, 9*n, H, W)
				hg = gb.FromI32(hist, 9*n, H)
			}
			got := gb.ReadI32(gb.SampleRows(gb.FromF32(logits, 9*n, W), hg, gb.FromI32(b.words(), n, compute.RowParamWords)))
			total += n
			bad += b.checkTokens(t, fmt.Sprintf("n %d trial %d", n, trial), got, logits, hist, H)
		}
	}
	t.Logf("%d utterances, %d identical to Sample alone", total, total-bad)
}

// TestRowSamplerGraph: GuideRows and SampleRows recorded once replay with
// the params rewritten between launches (other seeds, counters, knobs,
// scales, pad columns and empty slots, new heads and history), each
// replay drawing per utterance what Guide and Sample draw for it alone.
func TestRowSamplerGraph(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(65, 66))
	const n, W, H, eos = 5, 1026, 4, 1024
	heads := gb.FromF32(make([]float32, 2*9*n*W), 2, 9*n, W)
	hist := gb.FromI32(make([]int32, 9*n*H), 9*n, H)
	params := gb.FromI32(make([]int32, n*compute.RowParamWords), n, compute.RowParamWords)
	var tok compute.Tensor
	g, err := gb.Capture(func() {
		tok = gb.SampleRows(gb.GuideRows(heads, params, eos, true), hist, params)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	for replay := 0; replay < 4; replay++ {
		b := newRowBatch(r, n, W, replay)
		if replay%2 == 1 { // another slot empty
			b.rows[(replay+2)%n].Active = false
		}
		hv := randVals(r, 2*9*n*W, 3)
		hs := samplerHistory(r, 9*n, H, W)
		gb.WriteF32(heads, hv)
		gb.WriteI32(hist, hs)
		gb.WriteI32(params, b.words())
		if err := g.Launch(); err != nil {
			t.Fatal(err)
		}
		got := gb.ReadI32(tok)
		logits := make([]float32, 0, 9*n*W)
		for u := 0; u < n; u++ {
			logits = append(logits, b.guideOne(hv, u, eos, true)...)
		}
		if b.checkTokens(t, fmt.Sprintf("replay %d", replay), got, logits, hs, H) == 0 {
			t.Logf("replay %d: %d utterances identical to Guide and Sample alone", replay, n)
		}
	}
}
