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
// A step costs what its tier costs, not what the batch could hold: the
// utterances stand in the first rows of the caches, laid out as a batch of
// the tier's size t (the smallest power of two that holds them, at most
// n; conditional rows [0, t), unconditional [t, 2t)), and on a backend
// with compute.RowViewer the step runs on a view of those 2t rows, with
// a recorded step per tier. When an utterance leaves, the last one moves
// into its rows; when the utterances outgrow the tier, or shrink to a
// quarter of it, their unconditional rows move to the next tier's place.
// A tier's rows past its utterances are computed and ignored (pinned at
// position 0, their caches overwritten by the next Join, drawing nothing).
type Batch struct {
	m      *Model
	n      int
	big    *State // the caches of all n slots: 2n rows
	viewer compute.RowViewer
	tier   int            // utterances the current layout holds
	tiers  map[int]*State // per tier size: the view of its rows (big for n)
	graphs map[int]*batchGraph
	order  []int // slot ids by row: order[i] stands in rows i and tier + i
	slots  []slot
	ops    compute.SamplerOps    // nil: guidance and sampling on the host
	rows   compute.RowSamplerOps // with ops
	params []int32               // host copy of the RowSamplerOps params [tier, RowParamWords]
	eager  bool                  // the step runs op by op (recording failed, or RunEager)
}

// slot is one utterance's place in a Batch.
type slot struct {
	active  bool
	row     int // index in order: its rows are row and tier + row
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
	b := &Batch{m: m, n: n, slots: make([]slot, n), tiers: map[int]*State{}, graphs: map[int]*batchGraph{}}
	ops, isOps := m.b.(compute.SamplerOps)
	rows, isRows := m.b.(compute.RowSamplerOps)
	if isOps && isRows {
		b.ops, b.rows = ops, rows
	}
	b.big = m.newState(n, maxLen)
	b.tiers[n] = b.big
	b.viewer, _ = m.b.(compute.RowViewer)
	b.tier = b.tierFor(1)
	return b, nil
}

// tierFor is the tier that holds k utterances: the smallest power of two
// at least k, at most n (n itself without compute.RowViewer).
func (b *Batch) tierFor(k int) int {
	if b.viewer == nil {
		return b.n
	}
	t := 1
	for t < k {
		t *= 2
	}
	return min(t, b.n)
}

// st is the state of the current tier: a view of the first 2·tier rows.
func (b *Batch) st() *State {
	st, ok := b.tiers[b.tier]
	if !ok {
		b.m.onDevice(func() { st = b.big.rowsView(b.viewer, b.tier) })
		b.tiers[b.tier] = st
	}
	return st
}

// Tier is how many utterances the current step layout holds (what a step
// costs; at least Occupied).
func (b *Batch) Tier() int { return b.tier }

// setTier lays the utterances out for tier t: each one's unconditional row
// moves from tier + i to t + i (in an order that never overwrites a row
// still to move).
func (b *Batch) setTier(t int) {
	if t == b.tier {
		return
	}
	from := b.tier
	b.m.onDevice(func() {
		move := func(i int) { b.big.copyRow(b.m.b, t+i, b.big, from+i) }
		if t > from {
			for i := len(b.order) - 1; i >= 0; i-- {
				move(i)
			}
		} else {
			for i := range b.order {
				move(i)
			}
		}
	})
	b.tier = t
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
func (b *Batch) MaxLen() int { return b.big.maxLen }

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
	if err := b.m.checkPrefix(prefix, b.big.maxLen, len(cols)); err != nil {
		return nil, fmt.Errorf("batch join: %w", err)
	}
	emb, err := b.m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	// The prompt's own state holds just its positions: copyRow moves
	// those into the slot's rows.
	one := b.m.newState(1, prefix.Shape()[1]+len(cols))
	defer one.free(b.m.b)
	heads, err := b.m.forwardHeads(one, b.m.b.Concat(1, prefix, emb), nil)
	if err != nil {
		return nil, err
	}
	if len(b.order) == 0 {
		b.tier = b.tierFor(1) // no rows to move
	} else {
		b.setTier(max(b.tier, b.tierFor(len(b.order)+1)))
	}
	i := len(b.order)
	b.m.onDevice(func() {
		b.big.copyRow(b.m.b, i, one, 0)
		b.big.copyRow(b.m.b, b.tier+i, one, 1)
	})
	s := slot{active: true, row: i, pos: one.pos, cfg: o.CFGScale, spec: specOf(o.Sampling), forbid: o.ForbidEOS, seed: o.Seed}
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
	b.order = append(b.order, u)
	b.slots[u] = s
	return tok, nil
}

// Adopt moves an utterance decoding alone on dec into the empty slot u
// between two of its steps: its caches are copied into the slot's rows
// and its sampler goes on where it stands (the host sampler itself, or the
// device draw's Philox counter), so its later steps in the batch draw
// what its own decoder would have drawn from the same logits. o is the
// decoder's options. The decoder must hold no step queued on the device
// (Decoder.Queued) and stand at a position this batch's cache holds (its
// own cache may be longer: a pooled state); it can be closed afterwards.
// The caller sees to it that the rest of the utterance fits the batch's
// positions too (the Scheduler keeps one that would not alone): a slot
// that outgrows them fails the batch's next step.
func (b *Batch) Adopt(u int, dec *Decoder, o GenerateOptions) error {
	if u < 0 || u >= b.n || b.slots[u].active {
		return fmt.Errorf("batch adopt: slot %d is not an empty slot of %d", u, b.n)
	}
	if dec.st.pos+1 > b.big.maxLen {
		return fmt.Errorf("batch adopt: a decoder at position %d into slots of %d positions", dec.st.pos, b.big.maxLen)
	}
	if dec.Queued() {
		return fmt.Errorf("batch adopt: the decoder has a step queued on the device")
	}
	s := slot{active: true, pos: dec.st.pos, cfg: o.CFGScale, spec: specOf(o.Sampling), forbid: o.ForbidEOS, seed: o.Seed}
	switch ts := dec.ts.(type) {
	case *hostTokens:
		if b.ops != nil {
			return fmt.Errorf("batch adopt: a host-sampled decoder into a device-sampled batch")
		}
		s.host = ts.sampler
	case *deviceTokens:
		if b.ops == nil {
			return fmt.Errorf("batch adopt: a device-sampled decoder into a host-sampled batch")
		}
		s.counter = ts.counter
	}
	if len(b.order) == 0 {
		b.tier = b.tierFor(1)
	} else {
		b.setTier(max(b.tier, b.tierFor(len(b.order)+1)))
	}
	i := len(b.order)
	b.m.onDevice(func() {
		b.big.copyRow(b.m.b, i, dec.st, 0)
		b.big.copyRow(b.m.b, b.tier+i, dec.st, 1)
	})
	s.row = i
	b.order = append(b.order, u)
	b.slots[u] = s
	return nil
}

// Leave empties slot u (its utterance ended or was cancelled); a later
// Join may reuse it. The last utterance's rows move into its rows, and a
// batch down to a quarter of its tier moves to a smaller one.
func (b *Batch) Leave(u int) error {
	if u < 0 || u >= b.n {
		return fmt.Errorf("batch slot %d; the batch has %d", u, b.n)
	}
	if !b.slots[u].active {
		return nil
	}
	i, last := b.slots[u].row, len(b.order)-1
	if i != last {
		b.m.onDevice(func() {
			b.big.copyRow(b.m.b, i, b.big, last)
			b.big.copyRow(b.m.b, b.tier+i, b.big, b.tier+last)
		})
		moved := b.order[last]
		b.order[i], b.slots[moved].row = moved, i
	}
	b.order = b.order[:last]
	b.slots[u] = slot{}
	if k := len(b.order); k > 0 && 4*k <= b.tier {
		b.setTier(b.tierFor(2 * k))
	}
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
	heads, err := b.forward(b.byRow(cols))
	if err != nil {
		return nil, err
	}
	all := b.m.b.ReadF32(heads)
	out := make([][]float32, b.n)
	for i, u := range b.order {
		out[u] = b.guideRow(all, i)
	}
	return out, nil
}

// guideRow is row i's guided logits [9·W] from the heads' output all
// ([2, 9·tier, W] on the host), with its utterance's scale.
func (b *Batch) guideRow(all []float32, i int) []float32 {
	per := NumCodebooks * LogitWidth
	half := b.tier * per
	pair := make([]float32, 0, 2*per)
	pair = append(pair, all[i*per:(i+1)*per]...)
	pair = append(pair, all[half+i*per:half+(i+1)*per]...)
	return guide(pair, b.slots[b.order[i]].cfg)
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
	rc, rh := b.byRow(cols), b.historiesByRow(histories)
	if err := checkColumns(rc); err != nil {
		return nil, err
	}
	if b.ops == nil {
		heads, err := b.forward(rc)
		if err != nil {
			return nil, err
		}
		return b.drawHost(heads, rh), nil
	}
	pos, err := b.stepPositions()
	if err != nil {
		return nil, err
	}
	b.putParams()
	var tok []int32
	if g := b.stepGraph(rh); g != nil {
		tok, err = g.replay(b, rc, rh, pos)
	} else {
		tok, err = b.stepEager(rc, rh, pos)
	}
	if err != nil {
		return nil, err
	}
	b.advance()
	return b.split(tok), nil
}

// byRow is the slots' columns in the tier's row order, an all-MASK column
// (a valid embedding row) in every row past the utterances.
func (b *Batch) byRow(cols [][NumCodebooks]int32) [][NumCodebooks]int32 {
	out := make([][NumCodebooks]int32, b.tier)
	for i := range out {
		if i < len(b.order) {
			out[i] = cols[b.order[i]]
			continue
		}
		for k := range out[i] {
			out[i][k] = MASK
		}
	}
	return out
}

// historiesByRow is the slots' repetition windows in row order: none for
// a row past the utterances or of an utterance without the penalty.
func (b *Batch) historiesByRow(histories [][][]int32) [][][]int32 {
	out := make([][][]int32, b.tier)
	for i, u := range b.order {
		if b.slots[u].spec.Penalty != 1 {
			out[i] = histories[u]
		}
	}
	return out
}

// putParams writes every row's RowSamplerOps params (its counter before
// this step's draw) into b.params and advances the counters past the draw.
func (b *Batch) putParams() {
	b.params = append(b.params[:0], make([]int32, b.tier*compute.RowParamWords)...)
	for i, u := range b.order {
		s := &b.slots[u]
		compute.PutRowParams(b.params[i*compute.RowParamWords:], compute.RowParams{Spec: s.spec, Seed: s.seed,
			Counter: s.counter, Scale: s.cfg, PadFrom: padFrom(s.forbid, true), Active: true})
		if s.spec.Temperature > 0 {
			s.counter += uint64((NumCodebooks*LogitWidth + 3) / 4)
		}
	}
	for i := len(b.order); i < b.tier; i++ {
		compute.PutRowParams(b.params[i*compute.RowParamWords:], compute.RowParams{Spec: compute.SampleSpec{Penalty: 1}, PadFrom: MASK})
	}
}

// stepEager is one device step op by op: the backbone, then guidance and
// sampling with every row's own params.
func (b *Batch) stepEager(cols [][NumCodebooks]int32, histories [][][]int32, pos []int) ([]int32, error) {
	ids := columnIDs(cols)
	st := b.st()
	var tok compute.Tensor
	b.m.onDevice(func() {
		be := b.m.b
		heads := b.m.backbone(st, b.m.embedColumn(be.FromI32(ids, len(ids))), positionsOf(pos), nil)
		params := be.FromI32(b.params, b.tier, compute.RowParamWords)
		var hist compute.Tensor
		if h := paddedHistories(histories); h != nil {
			hist = be.FromI32(flatHistories(h), NumCodebooks*b.tier, len(h[0][0]))
		}
		tok = b.rows.SampleRows(b.rows.GuideRows(heads, params, EOS, true), hist, params)
	})
	return b.m.b.ReadI32(tok), nil
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

// stepPositions is every row's position for the next step (0 past the
// utterances), checked against the caches.
func (b *Batch) stepPositions() ([]int, error) {
	if len(b.order) == 0 {
		return nil, fmt.Errorf("batch step with no utterance in any slot")
	}
	pos := make([]int, b.tier)
	for i, u := range b.order {
		s := b.slots[u]
		if s.pos+1 > b.big.maxLen {
			return nil, fmt.Errorf("batch slot %d is at %d positions, the batch holds %d", u, s.pos, b.big.maxLen)
		}
		pos[i] = s.pos
	}
	return pos, nil
}

// advance moves every utterance on by the step's one position.
func (b *Batch) advance() {
	for _, u := range b.order {
		b.slots[u].pos++
	}
}

// forward runs one step's backbone and heads for the tier's rows cols:
// [2, 9·tier, W] on the device.
func (b *Batch) forward(cols [][NumCodebooks]int32) (compute.Tensor, error) {
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	pos, err := b.stepPositions()
	if err != nil {
		return nil, err
	}
	ids := columnIDs(cols)
	st := b.st()
	var heads compute.Tensor
	b.m.onDevice(func() {
		emb := b.m.embedColumn(b.m.b.FromI32(ids, len(ids)))
		heads = b.m.backbone(st, emb, positionsOf(pos), nil)
	})
	b.advance()
	return heads, nil
}

// drawHost guides and samples heads [2, 9·tier, W] on the host, each
// utterance with its own scale and sampler, as hostTokens samples a
// decode step; histories are by row.
func (b *Batch) drawHost(heads compute.Tensor, histories [][][]int32) [][]int32 {
	all := b.m.b.ReadF32(heads)
	out := make([][]int32, b.n)
	for i, u := range b.order {
		s := b.slots[u]
		logits := b.guideRow(all, i)
		BiasEOS(logits)
		if s.forbid {
			logits[EOS] = float32(negInf())
		}
		out[u] = s.host.Sample(logits, LogitWidth, histories[i])
	}
	return out
}

// split cuts the tier's 9·tier tokens into each slot's nine (nil for an
// empty slot).
func (b *Batch) split(tok []int32) [][]int32 {
	out := make([][]int32, b.n)
	for i, u := range b.order {
		out[u] = tok[i*NumCodebooks : (i+1)*NumCodebooks]
	}
	return out
}

// RunEager makes every later step run op by op even where the backend
// could replay a recorded one: tests' and benchmarks' baseline, as
// GenerateOptions.EagerSteps is for one utterance.
func (b *Batch) RunEager() { b.eager = true }

// Occupied is how many slots hold an utterance.
func (b *Batch) Occupied() int { return len(b.order) }

// Close frees the batch's caches, its tiers' views and their recorded
// steps.
func (b *Batch) Close() {
	for _, g := range b.graphs {
		g.destroy(b.m.b)
	}
	b.graphs = nil
	for t, st := range b.tiers {
		if t != b.n {
			st.free(b.m.b)
		}
	}
	b.tiers = nil
	if b.big != nil {
		b.big.free(b.m.b)
		b.big = nil
	}
}
