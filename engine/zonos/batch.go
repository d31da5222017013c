package zonos

import (
	"fmt"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
)

// MaxBatch bounds the utterances of one Batch.
const MaxBatch = 256

// Batch decodes up to n utterances at once: one state of 2n rows
// (utterance u's conditional row u, its unconditional row n + u), one
// backbone pass per step for all of them, and on a backend with
// compute.GraphOps one recorded step for the whole batch. The weights are
// read once per step for every utterance, which is what makes a batch
// cheaper per utterance than n single decoders.
//
// The batch is n slots. An utterance enters an empty slot with Join
// (its prompt prefilled on a state of its own, then copied in) and leaves
// with Leave, between steps, while the others go on: what a server
// multiplexing streams needs (Scheduler). Each utterance keeps its own
// position, guidance scale, sampler knobs, seed and noise stream, so the
// tokens it draws are the ones Generate would draw for it alone from the
// same logits: sampled on the host with its own engine/sample sampler on
// a backend without compute.RowSamplerOps (the CPU backend), else on the
// device with its own row of RowSamplerOps params, its Philox counter
// advancing as a single utterance's does.
//
// A step feeds one column to every occupied slot; an empty slot's rows
// are computed and ignored (pinned at position 0, its caches overwritten
// by the next Join, its row drawing nothing).
type Batch struct {
	m      *Model
	n      int
	st     *State
	slots  []slot
	ops    compute.SamplerOps    // nil: guidance and sampling on the host
	rows   compute.RowSamplerOps // with ops
	params []int32               // host copy of the RowSamplerOps params [n, RowParamWords]
	graph  *batchGraph           // the recorded step, or nil
	eager  bool                  // the step runs op by op (recording failed)
}

// slot is one utterance's place in a Batch.
type slot struct {
	active  bool
	pos     int // positions in its rows of the caches
	cfg     float32
	spec    compute.SampleSpec
	forbid  bool // GenerateOptions.ForbidEOS
	seed    uint64
	counter uint64          // Philox blocks drawn so far (device sampling)
	host    *sample.Sampler // host sampling
}

// NewBatch prepares n empty slots for utterances of at most maxLen
// positions each (prompt, fed columns and steps).
func (m *Model) NewBatch(n, maxLen int) (*Batch, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("batch of %d utterances; 1 to %d", n, MaxBatch)
	}
	if maxLen < 2 {
		return nil, fmt.Errorf("batch of %d positions per utterance; a prompt and a step need at least 2", maxLen)
	}
	b := &Batch{m: m, n: n, slots: make([]slot, n)}
	ops, isOps := m.b.(compute.SamplerOps)
	rows, isRows := m.b.(compute.RowSamplerOps)
	if isOps && isRows {
		b.ops, b.rows = ops, rows
		b.params = make([]int32, n*compute.RowParamWords)
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
	if s[1]+cols+1 > maxLen {
		return fmt.Errorf("a %d-position prompt and %d prefill columns leave no room for a step in %d positions", s[1], cols, maxLen)
	}
	return nil
}

// N is the number of slots.
func (b *Batch) N() int { return b.n }

// MaxLen is the positions each slot holds.
func (b *Batch) MaxLen() int { return b.st.maxLen }

// PosOf is the positions in slot u's rows of the caches (0 when empty).
func (b *Batch) PosOf(u int) int { return b.slots[u].pos }

// Active reports whether slot u holds an utterance.
func (b *Batch) Active(u int) bool { return b.slots[u].active }

// Join starts a new utterance in the empty slot u while the others stand
// wherever they are: its prompt prefix [2, L, d] (Model.Prefix) and the
// first delayed columns cols (grid[:P+1] of the generate loop: the audio
// prefix's columns and one more) run through a state of their own, which
// is then copied into the slot's rows, and its first nine tokens come
// back (no repetition penalty, no EOS bias), drawn as Generate's prefill
// draws them. o's guidance scale, sampler knobs, seed and ForbidEOS are
// the utterance's for all its steps (a noise source is not supported).
func (b *Batch) Join(u int, prefix compute.Tensor, cols [][NumCodebooks]int32, o GenerateOptions) ([]int32, error) {
	if u < 0 || u >= b.n {
		return nil, fmt.Errorf("batch slot %d; the batch has %d", u, b.n)
	}
	if b.slots[u].active {
		return nil, fmt.Errorf("batch slot %d holds an utterance; Leave it first", u)
	}
	if o.Noise != nil {
		return nil, fmt.Errorf("batch slot %d: batch decoding draws its own noise (no noise source)", u)
	}
	if err := o.Sampling.Validate(); err != nil {
		return nil, err
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
	s := slot{active: true, pos: one.pos, cfg: o.CFGScale, spec: specOf(o.Sampling), forbid: o.ForbidEOS, seed: o.Seed}
	var tok []int32
	if b.ops == nil {
		s.host = sample.New(o.Sampling, sample.NewPhilox(o.Seed))
		tok = s.host.Sample(guide(b.m.b.ReadF32(heads), s.cfg), LogitWidth, nil)
	} else {
		tok, err = drawOnDevice(b.m.b, b.ops, heads, s.cfg, padFrom(s.forbid, false), false, s.spec, nil, s.seed, &s.counter)
		if err != nil {
			return nil, err
		}
	}
	b.slots[u] = s
	return tok, nil
}

// Leave empties slot u (its utterance ended or was cancelled); a later
// Join may reuse it.
func (b *Batch) Leave(u int) error {
	if u < 0 || u >= b.n {
		return fmt.Errorf("batch slot %d; the batch has %d", u, b.n)
	}
	b.slots[u] = slot{}
	return nil
}

// Logits feeds one column to each occupied slot and returns each one's
// guided logits [9·1026] with its own scale (no sampling; nil for an
// empty slot): for tests and tools that compare a batch with
// single-utterance decoding.
func (b *Batch) Logits(cols [][NumCodebooks]int32) ([][]float32, error) {
	if len(cols) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns", b.n, len(cols))
	}
	heads, err := b.forward(b.occupied(cols))
	if err != nil {
		return nil, err
	}
	all := b.m.b.ReadF32(heads)
	out := make([][]float32, b.n)
	for u, s := range b.slots {
		if s.active {
			out[u] = b.guideSlot(all, u)
		}
	}
	return out, nil
}

// guideSlot is slot u's guided logits [9·W] from the heads' output all
// ([2, 9n, W] on the host).
func (b *Batch) guideSlot(all []float32, u int) []float32 {
	per := NumCodebooks * LogitWidth
	half := b.n * per
	pair := make([]float32, 0, 2*per)
	pair = append(pair, all[u*per:(u+1)*per]...)
	pair = append(pair, all[half+u*per:half+(u+1)*per]...)
	return guide(pair, b.slots[u].cfg)
}

// Step feeds column cols[u] to the utterance in slot u and returns each
// one's next nine tokens (nil for an empty slot, whose column and history
// are not read), drawn as Generate's decode steps draw them (EOS bias,
// ForbidEOS, repetition window); histories[u] is slot u's repetition
// window as the generate loop builds it (nil before any). Where the
// backend records graphs, the whole batched step is one replay.
func (b *Batch) Step(cols [][NumCodebooks]int32, histories [][][]int32) ([][]int32, error) {
	if len(cols) != b.n || len(histories) != b.n {
		return nil, fmt.Errorf("batch of %d utterances fed %d columns and %d histories", b.n, len(cols), len(histories))
	}
	cols, histories = b.occupied(cols), b.occupiedHistories(histories)
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	if b.ops == nil {
		heads, err := b.forward(cols)
		if err != nil {
			return nil, err
		}
		return b.drawHost(heads, histories), nil
	}
	pos, err := b.stepPositions()
	if err != nil {
		return nil, err
	}
	b.putParams()
	var tok []int32
	if g := b.stepGraph(histories); g != nil {
		tok, err = g.replay(b, cols, histories, pos)
	} else {
		tok, err = b.stepEager(cols, histories, pos)
	}
	if err != nil {
		return nil, err
	}
	b.advance()
	return b.split(tok), nil
}

// putParams writes every slot's RowSamplerOps params (its counter before
// this step's draw) into b.params and advances the counters past the draw.
func (b *Batch) putParams() {
	for u := range b.slots {
		s := &b.slots[u]
		compute.PutRowParams(b.params[u*compute.RowParamWords:], compute.RowParams{Spec: s.spec, Seed: s.seed,
			Counter: s.counter, Scale: s.cfg, PadFrom: padFrom(s.forbid, true), Active: s.active})
		if s.active && s.spec.Temperature > 0 {
			s.counter += uint64((NumCodebooks*LogitWidth + 3) / 4)
		}
	}
}

// stepEager is one device step op by op: the backbone, then guidance and
// sampling with every slot's own params.
func (b *Batch) stepEager(cols [][NumCodebooks]int32, histories [][][]int32, pos []int) ([]int32, error) {
	ids := columnIDs(cols)
	var tok compute.Tensor
	b.m.onDevice(func() {
		be := b.m.b
		heads := b.m.backbone(b.st, b.m.embedColumn(be.FromI32(ids, len(ids))), positionsOf(pos), nil)
		params := be.FromI32(b.params, b.n, compute.RowParamWords)
		var hist compute.Tensor
		if h := paddedHistories(histories); h != nil {
			hist = be.FromI32(flatHistories(h), NumCodebooks*b.n, len(h[0][0]))
		}
		tok = b.rows.SampleRows(b.rows.GuideRows(heads, params, EOS, true), hist, params)
	})
	return b.m.b.ReadI32(tok), nil
}

// occupied is cols with an all-MASK column (a valid embedding row) in
// every empty slot.
func (b *Batch) occupied(cols [][NumCodebooks]int32) [][NumCodebooks]int32 {
	out := append([][NumCodebooks]int32(nil), cols...)
	for u := range out {
		if !b.slots[u].active {
			for k := range out[u] {
				out[u][k] = MASK
			}
		}
	}
	return out
}

// occupiedHistories is histories with none for an empty slot or a slot
// without repetition penalty.
func (b *Batch) occupiedHistories(histories [][][]int32) [][][]int32 {
	out := make([][][]int32, len(histories))
	for u, h := range histories {
		if s := b.slots[u]; s.active && s.spec.Penalty != 1 {
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
			out[u][k] = padRow(src, w)
		}
	}
	return out
}

// padRow is the last w entries of src, left-padded with −1 to w.
func padRow(src []int32, w int) []int32 {
	if len(src) > w {
		src = src[len(src)-w:]
	}
	row := make([]int32, w)
	pad := w - len(src)
	for i := 0; i < pad; i++ {
		row[i] = -1
	}
	copy(row[pad:], src)
	return row
}

// flatHistories is padded windows [n][9][w] as one row-major [9n, w].
func flatHistories(h [][][]int32) []int32 {
	var flat []int32
	for _, rows := range h {
		for _, row := range rows {
			flat = append(flat, row...)
		}
	}
	return flat
}

// stepPositions is every slot's position for the next step (0 for an
// empty slot), checked against the caches.
func (b *Batch) stepPositions() ([]int, error) {
	pos := make([]int, b.n)
	any := false
	for u, s := range b.slots {
		if s.active {
			if s.pos+1 > b.st.maxLen {
				return nil, fmt.Errorf("batch slot %d is at %d positions, the batch holds %d", u, s.pos, b.st.maxLen)
			}
			pos[u], any = s.pos, true
		}
	}
	if !any {
		return nil, fmt.Errorf("batch step with no utterance in any slot")
	}
	return pos, nil
}

// positionsOf is pos as attention takes it: one position for all rows
// where every slot stands at the same one, else one per utterance.
func positionsOf(pos []int) compute.Positions {
	for _, p := range pos {
		if p != pos[0] {
			return compute.Positions{Rows: pos}
		}
	}
	return compute.Positions{Start: pos[0]}
}

// advance moves every occupied slot on by the step's one position.
func (b *Batch) advance() {
	for u := range b.slots {
		if b.slots[u].active {
			b.slots[u].pos++
		}
	}
}

// columnIDs is n columns as the embedding takes them: [9, n],
// codebook-major.
func columnIDs(cols [][NumCodebooks]int32) []int32 {
	n := len(cols)
	ids := make([]int32, NumCodebooks*n)
	for u, c := range cols {
		for k := range c {
			ids[k*n+u] = c[k]
		}
	}
	return ids
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
	ids := columnIDs(cols)
	var heads compute.Tensor
	b.m.onDevice(func() {
		emb := b.m.embedColumn(b.m.b.FromI32(ids, len(ids)))
		heads = b.m.backbone(b.st, emb, positionsOf(pos), nil)
	})
	b.advance()
	return heads, nil
}

// drawHost guides and samples heads [2, 9n, W] on the host, each slot
// with its own scale and sampler, as hostTokens samples a decode step.
func (b *Batch) drawHost(heads compute.Tensor, histories [][][]int32) [][]int32 {
	all := b.m.b.ReadF32(heads)
	out := make([][]int32, b.n)
	for u, s := range b.slots {
		if !s.active {
			continue
		}
		logits := b.guideSlot(all, u)
		BiasEOS(logits)
		if s.forbid {
			logits[EOS] = float32(negInf())
		}
		out[u] = s.host.Sample(logits, LogitWidth, histories[u])
	}
	return out
}

// split cuts the batch's 9n tokens into each utterance's nine (nil for an
// empty slot).
func (b *Batch) split(tok []int32) [][]int32 {
	out := make([][]int32, b.n)
	for u, s := range b.slots {
		if s.active {
			out[u] = tok[u*NumCodebooks : (u+1)*NumCodebooks]
		}
	}
	return out
}

// Close frees the batch's state and its recorded step.
func (b *Batch) Close() {
	if b.graph != nil {
		b.graph.destroy(b.m.b)
		b.graph = nil
	}
	if b.st != nil {
		b.st.free(b.m.b)
		b.st = nil
	}
}

// RunEager makes every later step run op by op even where the backend
// could replay a recorded one: tests' and benchmarks' baseline, as
// GenerateOptions.EagerSteps is for one utterance.
func (b *Batch) RunEager() { b.eager = true }

// Occupied is how many slots hold an utterance.
func (b *Batch) Occupied() int {
	n := 0
	for _, s := range b.slots {
		if s.active {
			n++
		}
	}
	return n
}
