package zonos

import (
	"fmt"
	"slices"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// MaxBatch bounds the utterances of one Batch.
const MaxBatch = 64

// Batch decodes n utterances at once: one state of 2n rows (utterance u's
// conditional row u, its unconditional row n + u), one backbone pass per
// step for all of them, and on a backend with compute.GraphOps one
// recorded step graph for the whole batch. The weights are read once per
// step for every utterance, which is what makes a batch cheaper per
// utterance than n single decoders.
//
// The batch is n slots. Each utterance stands at its own position: prompts
// may differ in length, and a slot can be emptied (Leave) and given a new
// utterance (Join) between steps while the others go on, which is what a
// server multiplexing streams needs. A step feeds one column to every
// occupied slot; an empty slot's rows are computed and ignored (pinned at
// position 0, its caches overwritten by the next Join). Where every
// occupied slot stands at the same position the step is the lockstep one
// (one position for all rows); otherwise attention takes a position per
// utterance (compute.Positions.Rows, or the step graph's device
// positions, compute.Positions.Dev).
//
// Sampling: on a backend with compute.SamplerOps one draw covers the
// batch's 9n rows with the batch's seed, the Philox counter running over
// the rows utterance by utterance; elsewhere each slot u samples on the
// host with its own stream, seeded Seed + u. Either way the tokens are
// reproducible for a seed and a sequence of calls, and an utterance's
// tokens depend on its slot and on what the others do.
type Batch struct {
	m        *Model
	n        int
	st       *State
	prefix   compute.Tensor   // [2n, L, d] for a lockstep Prefill, or nil
	prefixes []compute.Tensor // the caller's prompts for a ragged Prefill, or nil
	pos      []int            // per slot: positions in its rows of the caches
	active   []bool           // per slot: holds an utterance
	cfg      float32
	spec     compute.SampleSpec
	ops      compute.SamplerOps // nil: guidance and sampling on the host
	host     []*sample.Sampler  // host path: one per slot
	seed     uint64
	counter  uint64
	forbid   bool
	eager    bool
}

// NewBatch prepares len(prefixes) utterances, each prefix [2, L_u, d] from
// Prefix, for at most maxLen positions each; Prefill then starts them all.
// o supplies the guidance scale, the sampler knobs, the seed, ForbidEOS
// and EagerSteps (Noise and AudioPrefix are not supported here). Prompts
// may differ in length.
func (m *Model) NewBatch(prefixes []compute.Tensor, maxLen int, o GenerateOptions) (*Batch, error) {
	n := len(prefixes)
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("batch of %d utterances; 1 to %d", n, MaxBatch)
	}
	lockstep := true
	for u, p := range prefixes {
		if err := m.checkPrefix(p, maxLen, 1); err != nil {
			return nil, fmt.Errorf("batch prefix %d: %w", u, err)
		}
		lockstep = lockstep && p.Shape()[1] == prefixes[0].Shape()[1]
	}
	b, err := m.NewEmptyBatch(n, maxLen, o)
	if err != nil {
		return nil, err
	}
	if lockstep {
		b.prefix = b.rowsOf(prefixes)
	} else {
		b.prefixes = append([]compute.Tensor(nil), prefixes...)
	}
	return b, nil
}

// NewEmptyBatch prepares n empty slots for at most maxLen positions each;
// utterances enter with Join. o is as for NewBatch.
func (m *Model) NewEmptyBatch(n, maxLen int, o GenerateOptions) (*Batch, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("batch of %d utterances; 1 to %d", n, MaxBatch)
	}
	if o.Noise != nil || len(o.AudioPrefix) > 0 {
		return nil, fmt.Errorf("batch decoding takes neither a noise source nor an audio prefix")
	}
	if err := o.Sampling.Validate(); err != nil {
		return nil, err
	}
	if maxLen < 2 {
		return nil, fmt.Errorf("batch of %d positions per utterance; a prompt and a step need at least 2", maxLen)
	}
	b := &Batch{m: m, n: n, cfg: o.CFGScale, spec: specOf(o.Sampling), seed: o.Seed, forbid: o.ForbidEOS, eager: o.EagerSteps,
		pos: make([]int, n), active: make([]bool, n)}
	if ops, ok := m.b.(compute.SamplerOps); ok {
		b.ops = ops
	} else {
		for u := 0; u < n; u++ {
			b.host = append(b.host, sample.New(o.Sampling, sample.NewPhilox(o.Seed+uint64(u))))
		}
	}
	b.st = m.newState(n, maxLen)
	return b, nil
}

// checkPrefix refuses a prompt that is not [2, L, d] or leaves no room for
// cols prefill columns and one step in maxLen positions.
func (m *Model) checkPrefix(p compute.Tensor, maxLen, cols int) error {
	s := p.Shape()
	if len(s) != 3 || s[0] != 2 || s[2] != m.Config.Backbone.DModel {
		return fmt.Errorf("prompt of shape %v; want [2, L, %d] (Model.Prefix)", s, m.Config.Backbone.DModel)
	}
	return roomFor(s[1], cols, maxLen)
}

// roomFor refuses a prompt of L positions whose cols prefill columns and
// one step do not fit in maxLen positions.
func roomFor(L, cols, maxLen int) error {
	if L+cols+1 > maxLen {
		return fmt.Errorf("a %d-position prompt and %d prefill columns leave no room for a step in %d positions", L, cols, maxLen)
	}
	return nil
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

// N is the number of slots.
func (b *Batch) N() int { return b.n }

// Pos is the positions in the caches of the furthest utterance (every
// utterance's, in lockstep).
func (b *Batch) Pos() int { return slices.Max(b.pos) }

// PosOf is the positions in slot u's rows of the caches (0 when empty).
func (b *Batch) PosOf(u int) int { return b.pos[u] }

// Active reports whether slot u holds an utterance.
func (b *Batch) Active(u int) bool { return b.active[u] }

// Prefill starts the utterances NewBatch was given: it feeds each prompt
// and the first delayed columns cols (the same for every utterance: one
// all-MASK column without an audio prefix) and returns each utterance's
// nine tokens (no repetition penalty, no EOS bias). Prompts of one length
// run as one pass for all; otherwise each joins its slot in turn.
func (b *Batch) Prefill(cols [][NumCodebooks]int32) ([][]int32, error) {
	if b.prefix == nil && b.prefixes == nil {
		return nil, fmt.Errorf("batch prefill: no prompts waiting (a batch prefills once; later utterances Join)")
	}
	if b.prefixes != nil {
		out := make([][]int32, b.n)
		for u, p := range b.prefixes {
			if p == nil { // left before it started
				continue
			}
			tok, err := b.Join(u, p, cols)
			if err != nil {
				return nil, err
			}
			out[u] = tok
		}
		b.prefixes = nil
		return out, nil
	}
	L := b.prefix.Shape()[1]
	if err := roomFor(L, len(cols), b.st.maxLen); err != nil {
		return nil, err
	}
	emb, err := b.m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	embs := make([]compute.Tensor, b.n)
	for u := range embs {
		embs[u] = emb
	}
	hidden := b.m.b.Concat(1, b.prefix, b.rowsOf(embs))
	var heads compute.Tensor
	b.m.onDevice(func() { heads = b.m.backbone(b.st, hidden, compute.Positions{}, nil) })
	b.m.b.Free(b.prefix)
	b.prefix = nil
	for u := range b.pos {
		b.pos[u], b.active[u] = L+len(cols), true
	}
	return b.draw(heads, nil, false)
}

// Join starts a new utterance in the empty slot u while the others stand
// wherever they are: its prompt prefix [2, L, d] (Model.Prefix) and the
// first delayed columns cols run through a state of their own, which is
// then copied into the slot's rows, and its first nine tokens come back
// (no repetition penalty, no EOS bias). Its later steps go with the
// batch's.
func (b *Batch) Join(u int, prefix compute.Tensor, cols [][NumCodebooks]int32) ([]int32, error) {
	if u < 0 || u >= b.n {
		return nil, fmt.Errorf("batch slot %d; the batch has %d", u, b.n)
	}
	if b.active[u] {
		return nil, fmt.Errorf("batch slot %d holds an utterance; Leave it first", u)
	}
	if err := b.m.checkPrefix(prefix, b.st.maxLen, len(cols)); err != nil {
		return nil, fmt.Errorf("batch join: %w", err)
	}
	emb, err := b.m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	one := b.m.newState(1, b.st.maxLen)
	defer one.free(b.m.b)
	heads, err := b.m.forwardHeads(one, b.m.b.Concat(1, prefix, emb), nil)
	if err != nil {
		return nil, err
	}
	b.m.onDevice(func() { b.st.copyUtterance(b.m.b, u, one) })
	b.pos[u], b.active[u] = one.pos, true
	if b.ops == nil {
		logits := guide(b.m.b.ReadF32(heads), b.cfg)
		return b.host[u].Sample(logits, LogitWidth, nil), nil
	}
	return drawOnDevice(b.m.b, b.ops, heads, b.cfg, padFrom(b.forbid, false), false, b.spec, nil, b.seed, &b.counter)
}

// Leave empties slot u (its utterance ended or was cancelled); a later
// Join may reuse it.
func (b *Batch) Leave(u int) error {
	if u < 0 || u >= b.n {
		return fmt.Errorf("batch slot %d; the batch has %d", u, b.n)
	}
	if b.prefixes != nil {
		b.prefixes[u] = nil // its prompt, if not prefilled yet, is dropped
	}
	b.active[u], b.pos[u] = false, 0
	return nil
}

// Logits feeds one column to each occupied slot and returns each one's
// guided logits [9·1026] (no sampling; nil for an empty slot): for tests
// and tools that compare a batch with single-utterance decoding.
func (b *Batch) Logits(cols [][NumCodebooks]int32) ([][]float32, error) {
	if len(cols) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns", b.n, len(cols))
	}
	heads, err := b.forward(b.occupied(cols))
	if err != nil {
		return nil, err
	}
	all := guide(b.m.b.ReadF32(heads), b.cfg)
	out := make([][]float32, b.n)
	per := NumCodebooks * LogitWidth
	for u := range out {
		if b.active[u] {
			out[u] = all[u*per : (u+1)*per]
		}
	}
	return out, nil
}

// Step feeds column cols[u] to the utterance in slot u and returns each
// one's next nine tokens (nil for an empty slot, whose column and history
// are not read); histories[u] is slot u's repetition window (nil before
// any). Where the backend records graphs, the whole batched step is one
// replay.
func (b *Batch) Step(cols [][NumCodebooks]int32, histories [][][]int32) ([][]int32, error) {
	if len(cols) != b.n || len(histories) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns and %d histories", b.n, len(cols), len(histories))
	}
	cols, histories = b.occupied(cols), b.occupiedHistories(histories)
	if sg := b.stepGraph(); sg != nil { // setInput pads the windows itself
		pos, err := b.stepPositions()
		if err != nil {
			return nil, err
		}
		tok, err := sg.replay(b.m, b.st, cols, histories, pos, b.seed, b.counter)
		if err != nil {
			return nil, err
		}
		if b.spec.Temperature > 0 {
			b.counter += b.draws()
		}
		b.advance()
		return b.split(tok), nil
	}
	heads, err := b.forward(cols)
	if err != nil {
		return nil, err
	}
	return b.draw(heads, histories, true)
}

// occupied is cols with an all-MASK column (a valid embedding row) in
// every empty slot.
func (b *Batch) occupied(cols [][NumCodebooks]int32) [][NumCodebooks]int32 {
	out := append([][NumCodebooks]int32(nil), cols...)
	for u := range out {
		if !b.active[u] {
			for k := range out[u] {
				out[u][k] = MASK
			}
		}
	}
	return out
}

// occupiedHistories is histories with none for an empty slot.
func (b *Batch) occupiedHistories(histories [][][]int32) [][][]int32 {
	out := make([][][]int32, len(histories))
	for u, h := range histories {
		if b.active[u] {
			out[u] = h
		}
	}
	return out
}

// paddedHistories is histories as one device draw takes them: every slot's
// nine windows, left-padded with −1 (no token) to the longest window's
// length, since utterances of different ages (or an empty slot) have
// windows of different lengths; nil when no slot has any history.
func paddedHistories(histories [][][]int32) [][][]int32 {
	w := 0
	for _, h := range histories {
		for _, row := range h {
			w = max(w, len(row))
		}
	}
	if w == 0 {
		return nil
	}
	out := make([][][]int32, len(histories))
	for u, h := range histories {
		out[u] = make([][]int32, NumCodebooks)
		for k := range out[u] {
			var src []int32
			if k < len(h) {
				src = h[k]
			}
			row := make([]int32, w)
			pad := w - len(src)
			for i := 0; i < pad; i++ {
				row[i] = -1
			}
			copy(row[pad:], src)
			out[u][k] = row
		}
	}
	return out
}

// stepPositions is every slot's position for the next step (0 for an
// empty slot), checked against the caches.
func (b *Batch) stepPositions() ([]int, error) {
	if !slices.Contains(b.active, true) {
		return nil, fmt.Errorf("batch step with no utterance in any slot")
	}
	pos := make([]int, b.n)
	for u := range pos {
		if b.active[u] {
			if b.pos[u]+1 > b.st.maxLen {
				return nil, fmt.Errorf("batch slot %d is at %d positions, the batch holds %d", u, b.pos[u], b.st.maxLen)
			}
			pos[u] = b.pos[u]
		}
	}
	return pos, nil
}

// advance moves every occupied slot on by the step's one position.
func (b *Batch) advance() {
	for u := range b.pos {
		if b.active[u] {
			b.pos[u]++
		}
	}
}

// forward runs one step's backbone and heads for the n columns cols
// (empty slots' already MASK, occupied): [2, 9n, W] on the device.
func (b *Batch) forward(cols [][NumCodebooks]int32) (compute.Tensor, error) {
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	pos, err := b.stepPositions()
	if err != nil {
		return nil, err
	}
	at := compute.Positions{Start: pos[0]}
	for _, p := range pos {
		if p != pos[0] {
			at = compute.Positions{Rows: pos}
			break
		}
	}
	ids := make([]int32, NumCodebooks*b.n) // [9, n], codebook-major
	for u, c := range cols {
		for k := range c {
			ids[k*b.n+u] = c[k]
		}
	}
	var heads compute.Tensor
	b.m.onDevice(func() {
		emb := b.m.embedColumn(b.m.b.FromI32(ids, len(ids)))
		heads = b.m.backbone(b.st, emb, at, nil)
	})
	b.advance()
	return heads, nil
}

// draws is the Philox blocks one device draw over the batch consumes.
func (b *Batch) draws() uint64 { return uint64((b.n*NumCodebooks*LogitWidth + 3) / 4) }

// draw guides and samples heads [2, 9n, W] into each utterance's tokens.
func (b *Batch) draw(heads compute.Tensor, histories [][][]int32, eosBias bool) ([][]int32, error) {
	if b.ops == nil {
		return b.drawHost(heads, histories, eosBias), nil
	}
	tok, err := drawOnDevice(b.m.b, b.ops, heads, b.cfg, padFrom(b.forbid, eosBias), eosBias, b.spec, paddedHistories(histories), b.seed, &b.counter)
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
		if !b.active[u] {
			continue
		}
		logits := all[u*per : (u+1)*per]
		var h [][]int32
		if eosBias {
			BiasEOS(logits)
			if b.forbid {
				logits[EOS] = float32(negInf())
			}
			h = histories[u]
		}
		out[u] = b.host[u].Sample(logits, LogitWidth, h)
	}
	return out
}

// split cuts the batch's 9n tokens into each utterance's nine (nil for an
// empty slot).
func (b *Batch) split(tok []int32) [][]int32 {
	out := make([][]int32, b.n)
	for u := range out {
		if b.active[u] {
			out[u] = tok[u*NumCodebooks : (u+1)*NumCodebooks]
		}
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

// Close frees the batch's state, its recorded step and its stacked
// prompts (not the caller's).
func (b *Batch) Close() {
	if b.st != nil {
		b.st.free(b.m.b)
		if b.prefix != nil {
			b.m.b.Free(b.prefix)
		}
		b.st = nil
	}
}
