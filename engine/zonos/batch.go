package zonos

import (
	"fmt"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// MaxBatch bounds the utterances of one Batch.
const MaxBatch = 64

// Batch decodes n utterances at once: one state of 2n rows (each
// utterance's conditional row among the first n, its unconditional row
// among the last n), one backbone pass per step for all of them, and on a
// backend with compute.GraphOps one recorded step graph for the whole
// batch. The weights are read once per step for every utterance, which is
// what makes a batch cheaper per utterance than n single decoders.
//
// The utterances run in lockstep: their prompts must have the same length
// and every step feeds one column to each, so all share one position.
// Per-utterance positions (prompts of different lengths, utterances that
// join and leave) need attention with a position per row; that is the
// next step towards multiplexing streams, and not built yet.
//
// Sampling: on a backend with compute.SamplerOps one draw covers the
// batch's 9n rows with the batch's seed, the Philox counter running over
// the rows utterance by utterance; elsewhere each utterance u samples on
// the host with its own stream, seeded Seed + u. Either way the tokens are
// reproducible for a seed, and an utterance's tokens depend on its place
// in the batch.
type Batch struct {
	m       *Model
	n       int
	st      *State
	prefix  compute.Tensor // [2n, L, d]
	cfg     float32
	spec    compute.SampleSpec
	ops     compute.SamplerOps // nil: guidance and sampling on the host
	host    []*sample.Sampler  // host path: one per utterance
	seed    uint64
	counter uint64
	forbid  bool
	eager   bool
}

// NewBatch prepares len(prefixes) utterances, each prefix [2, L, d] from
// Prefix with the same L, for at most maxLen positions each. o supplies
// the guidance scale, the sampler knobs, the seed, ForbidEOS and
// EagerSteps (Noise and AudioPrefix are not supported here).
func (m *Model) NewBatch(prefixes []compute.Tensor, maxLen int, o GenerateOptions) (*Batch, error) {
	n := len(prefixes)
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("batch of %d utterances; 1 to %d", n, MaxBatch)
	}
	if o.Noise != nil || len(o.AudioPrefix) > 0 {
		return nil, fmt.Errorf("batch decoding takes neither a noise source nor an audio prefix")
	}
	if err := o.Sampling.Validate(); err != nil {
		return nil, err
	}
	s0 := prefixes[0].Shape()
	for u, p := range prefixes {
		s := p.Shape()
		if len(s) != 3 || s[0] != 2 || s[1] != s0[1] || s[2] != m.Config.Backbone.DModel {
			return nil, fmt.Errorf("batch prefix %d has shape %v; every prefix must be [2, %d, %d] (lockstep: equal prompt lengths)",
				u, s, s0[1], m.Config.Backbone.DModel)
		}
	}
	if maxLen < s0[1]+1 {
		return nil, fmt.Errorf("batch of %d positions cannot hold a %d-position prompt", maxLen, s0[1])
	}
	b := &Batch{m: m, n: n, cfg: o.CFGScale, spec: specOf(o.Sampling), seed: o.Seed, forbid: o.ForbidEOS, eager: o.EagerSteps}
	if ops, ok := m.b.(compute.SamplerOps); ok {
		b.ops = ops
	} else {
		for u := 0; u < n; u++ {
			b.host = append(b.host, sample.New(o.Sampling, sample.NewPhilox(o.Seed+uint64(u))))
		}
	}
	b.prefix = b.rowsOf(prefixes)
	b.st = m.newState(n, maxLen)
	return b, nil
}

// rowsOf stacks per-utterance [2, T, d] tensors into the batch's row order
// [2n, T, d]: the conditional rows, then the unconditional ones.
func (b *Batch) rowsOf(ts []compute.Tensor) compute.Tensor {
	be := b.m.b
	var rows []compute.Tensor
	for c := 0; c < 2; c++ {
		for _, t := range ts {
			rows = append(rows, be.Slice(t, 0, c, c+1))
		}
	}
	return be.Concat(0, rows...)
}

// N is the number of utterances.
func (b *Batch) N() int { return b.n }

// Pos is the positions already in the batch's caches.
func (b *Batch) Pos() int { return b.st.pos }

// Prefill feeds the prompts and the first delayed columns cols (the same
// for every utterance: one all-MASK column without an audio prefix) and
// returns each utterance's nine tokens (no repetition penalty, no EOS
// bias).
func (b *Batch) Prefill(cols [][NumCodebooks]int32) ([][]int32, error) {
	if b.st.pos != 0 {
		return nil, fmt.Errorf("batch prefill after %d positions", b.st.pos)
	}
	emb, err := b.m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	embs := make([]compute.Tensor, b.n)
	for u := range embs {
		embs[u] = emb
	}
	heads, err := b.m.forwardHeads(b.st, b.m.b.Concat(1, b.prefix, b.rowsOf(embs)), nil)
	if err != nil {
		return nil, err
	}
	return b.draw(heads, nil, false)
}

// Logits feeds one column to each utterance and returns each one's
// guided logits [9·1026] (no sampling): for tests and tools that compare
// a batch with single-utterance decoding.
func (b *Batch) Logits(cols [][NumCodebooks]int32) ([][]float32, error) {
	heads, err := b.forward(cols)
	if err != nil {
		return nil, err
	}
	all := guide(b.m.b.ReadF32(heads), b.cfg)
	out := make([][]float32, b.n)
	per := NumCodebooks * LogitWidth
	for u := range out {
		out[u] = all[u*per : (u+1)*per]
	}
	return out, nil
}

// Step feeds column cols[u] to utterance u and returns each utterance's
// next nine tokens; histories[u] is utterance u's repetition window (rows
// of equal length across the batch, as lockstep decoding builds them; nil
// before any). Where the backend records graphs, the whole batched step
// is one replay.
func (b *Batch) Step(cols [][NumCodebooks]int32, histories [][][]int32) ([][]int32, error) {
	if len(cols) != b.n || len(histories) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns and %d histories", b.n, len(cols), len(histories))
	}
	if sg := b.stepGraph(); sg != nil {
		tok, err := sg.replay(b.m, b.st, cols, histories, b.seed, b.counter)
		if err != nil {
			return nil, err
		}
		if b.spec.Temperature > 0 {
			b.counter += b.draws()
		}
		return b.split(tok), nil
	}
	heads, err := b.forward(cols)
	if err != nil {
		return nil, err
	}
	return b.draw(heads, histories, true)
}

// forward runs one step's backbone and heads: [2, 9n, W] on the device.
func (b *Batch) forward(cols [][NumCodebooks]int32) (compute.Tensor, error) {
	if len(cols) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns", b.n, len(cols))
	}
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	ids := make([]int32, NumCodebooks*b.n) // [9, n], codebook-major
	for u, c := range cols {
		for k := range c {
			ids[k*b.n+u] = c[k]
		}
	}
	var emb compute.Tensor
	b.m.onDevice(func() { emb = b.m.embedColumn(b.m.b.FromI32(ids, len(ids))) })
	return b.m.forwardHeads(b.st, emb, nil)
}

// draws is the Philox blocks one device draw over the batch consumes.
func (b *Batch) draws() uint64 { return uint64((b.n*NumCodebooks*LogitWidth + 3) / 4) }

// draw guides and samples heads [2, 9n, W] into each utterance's tokens.
func (b *Batch) draw(heads compute.Tensor, histories [][][]int32, eosBias bool) ([][]int32, error) {
	if b.ops == nil {
		return b.drawHost(heads, histories, eosBias), nil
	}
	tok, err := drawOnDevice(b.m.b, b.ops, heads, b.cfg, padFrom(b.forbid, eosBias), eosBias, b.spec, histories, b.seed, &b.counter)
	if err != nil {
		return nil, err
	}
	return b.split(tok), nil
}

// drawHost is draw with engine/sample, one sampler per utterance.
func (b *Batch) drawHost(heads compute.Tensor, histories [][][]int32, eosBias bool) [][]int32 {
	all := guide(b.m.b.ReadF32(heads), b.cfg)
	per := NumCodebooks * LogitWidth
	out := make([][]int32, b.n)
	for u := range out {
		logits := all[u*per : (u+1)*per]
		var h [][]int32
		if eosBias {
			biasEOS(logits)
			if b.forbid {
				logits[EOS] = float32(negInf())
			}
			h = histories[u]
		}
		out[u] = b.host[u].Sample(logits, LogitWidth, h)
	}
	return out
}

// split cuts the batch's 9n tokens into each utterance's nine.
func (b *Batch) split(tok []int32) [][]int32 {
	out := make([][]int32, b.n)
	for u := range out {
		out[u] = tok[u*NumCodebooks : (u+1)*NumCodebooks]
	}
	return out
}

// stepGraph returns the batch's recorded step, recording it on first use;
// nil when the backend, the knobs or a failed recording rule graphs out.
func (b *Batch) stepGraph() *stepGraph {
	if _, ok := b.m.b.(compute.GraphOps); !ok || b.ops == nil || b.eager || !graphable(b.spec) {
		return nil
	}
	if b.st.graph != nil {
		return b.st.graph
	}
	sg, err := b.m.recordStep(b.st, b.ops, stepKey{cfg: b.cfg, spec: b.spec, padFrom: padFrom(b.forbid, true)})
	if err != nil {
		b.eager = true // the same step op by op
		return nil
	}
	b.st.graph = sg
	return sg
}

// Close frees the batch's state, its recorded step and its prompts.
func (b *Batch) Close() {
	if b.st != nil {
		b.st.free(b.m.b)
		b.m.b.Free(b.prefix)
		b.st = nil
	}
}
