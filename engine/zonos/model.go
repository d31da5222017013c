package zonos

import (
	"context"
	"fmt"
	"math"
	"sync"

	"zonostream/engine/compute"
	"zonostream/engine/weights"
)

// Vocabulary of the codebook tokens (ZONOS.md, "Checkpoint layout").
const (
	NumCodebooks = 9
	CodebookSize = 1024 // real codes 0…1023
	EOS          = 1024
	MASK         = 1025
	// LogitWidth is the loaded heads' width: Zonos' pad_weight_ pads the
	// 1025-row heads by rows % 8 = 1 row, and column 1025 is forced to −inf.
	LogitWidth = 1026
	embedRows  = 1026
)

// Model is a loaded Zonos checkpoint on a backend.
type Model struct {
	Config *Config

	b          compute.Backend
	prefix     *prefixConditioner
	embeddings [NumCodebooks]compute.Tensor // [1026, d]
	heads      compute.Tensor               // 9 heads stacked: [9·1026, d], pad rows zero
	layers     []*layer
	normF      norm
	eps        float32

	mu     sync.Mutex
	states statePool // idle states and their recorded decode steps (GraphOps backends)
}

// Load reads config.json and model.safetensors onto backend b.
func Load(b compute.Backend, configPath, weightsPath string) (*Model, error) {
	return LoadContext(context.Background(), b, configPath, weightsPath)
}

// LoadContext is Load that gives up between layers once ctx is done (a
// full-size load takes seconds; the app's Stop cancels it).
func LoadContext(ctx context.Context, b compute.Backend, configPath, weightsPath string) (*Model, error) {
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	f, err := weights.Open(weightsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewContext(ctx, b, cfg, f)
}

// New binds a checkpoint's tensors; every missing, unexpected or mis-shaped
// tensor is reported in one error.
func New(b compute.Backend, cfg *Config, f *weights.File) (*Model, error) {
	return NewContext(context.Background(), b, cfg, f)
}

// NewContext is New that stops between layers once ctx is done.
func NewContext(ctx context.Context, b compute.Backend, cfg *Config, f *weights.File) (*Model, error) {
	d := cfg.Backbone.DModel
	bd := newBinder(f, b)
	m := &Model{Config: cfg, b: b, eps: float32(cfg.Backbone.NormEpsilon)}
	m.prefix = loadPrefixConditioner(bd, cfg.PrefixConditioner, d)
	for k := range m.embeddings {
		m.embeddings[k] = bd.tensor(fmt.Sprintf("embeddings.%d.weight", k), embedRows, d)
	}
	m.heads = loadHeads(bd, d)
	for i := 0; i < cfg.Backbone.NLayer; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m.layers = append(m.layers, loadLayer(bd, cfg, i))
	}
	m.normF = loadNorm(bd, "backbone.norm_f", d)
	if err := bd.err(); err != nil {
		return nil, err
	}
	return m, nil
}

// loadHeads stacks the nine [1025, d] heads into one [9·1026, d] weight with
// a zero pad row each, so one Linear computes every codebook's logits.
func loadHeads(bd *binder, d int) compute.Tensor {
	var raws []*weights.Tensor
	for k := 0; k < NumCodebooks; k++ {
		raws = append(raws, bd.raw(fmt.Sprintf("heads.%d.weight", k), LogitWidth-1, d))
	}
	for _, r := range raws {
		if r == nil {
			return nil
		}
		if r.DType != raws[0].DType {
			bd.problems = append(bd.problems, fmt.Sprintf("%s is %s but heads.0.weight is %s", r.Name, r.DType, raws[0].DType))
			return nil
		}
	}
	es := raws[0].DType.Size()
	rowBytes := d * es
	buf := make([]byte, NumCodebooks*LogitWidth*rowBytes)
	for k, r := range raws {
		copy(buf[k*LogitWidth*rowBytes:], r.Data)
	}
	t, err := bd.backend.Upload(*dtypeOf(raws[0].DType), []int{NumCodebooks * LogitWidth, d}, buf)
	if err != nil {
		bd.problems = append(bd.problems, "heads: "+err.Error())
	}
	return t
}

// Backend is the backend the model lives on.
func (m *Model) Backend() compute.Backend { return m.b }

// Prefix computes the [2, L, d] conditioning prefix (row 0 conditional, row 1
// unconditional). Notes report inputs clamped into their conditioner's range.
func (m *Model) Prefix(in Inputs) (prefix compute.Tensor, notes []string, err error) {
	// Each conditioner of both rows is a few ops; one hand-off to the
	// backend's owner thread instead of one per op.
	m.onDevice(func() { prefix, notes, err = m.prefix.Prefix(in) })
	return prefix, notes, err
}

// State is the inference cache of one utterance (CFG batch of two). On a
// backend with compute.GraphOps, Generate takes states from the model's
// pool (states.go) and keeps the decode step recorded for each, so later
// utterances replay it without recording again.
type State struct {
	layers []layerState
	rows   int // 2 per utterance: conditional rows first, then unconditional (Batch)
	pos    int // positions already in the cache
	maxLen int
	graph  *stepGraph // the recorded decode step for this state's caches, or nil
}

// Pos is the number of positions already in the cache.
func (s *State) Pos() int { return s.pos }

// NewState allocates caches for up to maxLen positions.
func (m *Model) NewState(maxLen int) *State { return m.newState(1, maxLen) }

// newState allocates caches for n utterances (2n rows).
func (m *Model) newState(n, maxLen int) *State {
	st := &State{rows: 2 * n, maxLen: maxLen}
	for _, l := range m.layers {
		st.layers = append(st.layers, l.newState(m.b, 2*n, maxLen))
	}
	return st
}

// LayerHook receives the residual stream [2, T, d] after each block (the
// golden's layer_out); nil skips the extra work.
type LayerHook func(layer int, stream compute.Tensor)

// embedColumns sums the nine codebook embeddings of each delayed column and
// repeats the result for both CFG rows: [2, T, d].
func (m *Model) embedColumns(cols [][NumCodebooks]int32) (compute.Tensor, error) {
	T := len(cols)
	if err := checkColumns(cols); err != nil {
		return nil, err
	}
	ids := make([]int32, NumCodebooks*T) // [9, T], codebook-major
	for t, c := range cols {
		for k := range c {
			ids[k*T+t] = c[k]
		}
	}
	var out compute.Tensor
	m.onDevice(func() { out = m.sumEmbeddings(m.b.FromI32(ids, NumCodebooks, T)) })
	return out, nil
}

// sumEmbeddings adds the nine codebooks' embeddings of ids (I32 [9, T]) and
// repeats the sum for both CFG rows: [2, T, d]. Backends that can do it in
// one pass (compute.EmbeddingSummer) do.
func (m *Model) sumEmbeddings(ids compute.Tensor) compute.Tensor {
	if s, ok := m.b.(compute.EmbeddingSummer); ok {
		return s.EmbeddingSum(m.embeddings[:], ids, 2)
	}
	var sum compute.Tensor
	for k := 0; k < NumCodebooks; k++ {
		e := m.b.Embedding(m.embeddings[k], m.b.Slice(ids, 0, k, k+1))
		if sum == nil {
			sum = e
		} else {
			sum = m.b.Add(sum, e)
		}
	}
	return m.b.Concat(0, sum, sum)
}

// checkColumns refuses codes the embeddings have no row for.
func checkColumns(cols [][NumCodebooks]int32) error {
	for t, c := range cols {
		for k := range c {
			if c[k] < 0 || c[k] >= embedRows {
				return fmt.Errorf("code %d of codebook %d (column %d) outside [0, %d]", c[k], k, t, embedRows-1)
			}
		}
	}
	return nil
}

// embedColumn is embedColumns for one column of each of n utterances whose
// ids are an I32 [9·n] device tensor, codebook-major (a recorded step
// graph's input): [2n, 1, d], rows c·n + u.
func (m *Model) embedColumn(ids compute.Tensor) compute.Tensor {
	n := ids.Shape()[0] / NumCodebooks
	sum := m.sumEmbeddings(m.b.Reshape(ids, NumCodebooks, n)) // [2, n, d]: utterances as positions
	return m.b.Reshape(sum, 2*n, 1, sum.Shape()[2])           // rows c·n + u, one position each
}

// onDevice runs f through the backend's compute.Runner when it has one (a
// decode step's few hundred ops in one hand-off to the CUDA owner thread),
// else calls f.
func (m *Model) onDevice(f func()) { compute.Run(m.b, f) }

// forward runs the backbone on hidden [2, T, d] continuing from st and
// returns the CFG-combined logits of the last position, [9·1026] row-major.
func (m *Model) forward(st *State, hidden compute.Tensor, cfgScale float32, hook LayerHook) ([]float32, error) {
	heads, err := m.forwardHeads(st, hidden, hook)
	if err != nil {
		return nil, err
	}
	return guide(m.b.ReadF32(heads), cfgScale), nil
}

// forwardHeads runs the backbone and the heads, leaving the logits of the
// last position on the device: [2, 9, 1026] (row 0 conditional).
func (m *Model) forwardHeads(st *State, hidden compute.Tensor, hook LayerHook) (compute.Tensor, error) {
	T := hidden.Shape()[1]
	if st.pos+T > st.maxLen {
		return nil, fmt.Errorf("sequence of %d positions exceeds the %d the state was made for", st.pos+T, st.maxLen)
	}
	var heads compute.Tensor
	body := func() { heads = m.backbone(st, hidden, compute.Positions{Start: st.pos}, hook) }
	if hook == nil { // a hook is the caller's code: keep it off the owner thread
		m.onDevice(body)
	} else {
		body()
	}
	st.pos += T
	return heads, nil
}

// backbone enqueues the 46 blocks, the final norm and the heads for hidden
// [2, T, d] starting at pos; it neither checks nor advances st.pos (a
// recorded step graph replays it at every position).
func (m *Model) backbone(st *State, hidden compute.Tensor, pos compute.Positions, hook LayerHook) compute.Tensor {
	T := hidden.Shape()[1]
	in := hidden
	var residual compute.Tensor
	run, _ := m.b.(compute.Mamba2Run)
	declined := 0 // layers left of a run the backend declined
	for i := 0; i < len(m.layers); {
		// A decode step hands each run of Mamba2 blocks to the backend
		// whole where it can take it (one pass, no stop between layers);
		// a declined run goes block by block.
		if n := runLength(m.layers[i:]); run != nil && T == 1 && hook == nil && n > 0 && declined == 0 {
			if h, r, ok := run.Mamba2Run(hidden, residual, runBlocks(m.layers[i:i+n], st.layers[i:i+n]), m.eps); ok {
				m.free(in, hidden, residual)
				hidden, residual = h, r
				i += n
				continue
			}
			declined = n
		}
		h, r := m.layers[i].forward(m.b, hidden, residual, st.layers[i], pos, m.eps)
		if hook != nil {
			hook(i, m.b.Add(h, r))
		}
		m.free(in, hidden, residual)
		hidden, residual = h, r
		declined = max(declined-1, 0)
		i++
	}
	// Only the last position's logits are needed and the norm is per
	// position: slice first (a decode step, T = 1, needs no slice at all).
	fullH, fullR := hidden, residual
	if T > 1 {
		hidden, residual = m.b.Slice(hidden, 1, T-1, T), m.b.Slice(residual, 1, T-1, T)
	}
	last, sum := m.b.AddLayerNorm(hidden, residual, m.normF.w, m.normF.b, m.eps)
	// Rows c·n + u (conditional first) → [2, n·9, W]: guidance pairs
	// each utterance's codebook rows.
	rows := hidden.Shape()[0]
	heads := m.b.Linear(last, m.heads, nil)
	m.free(in, last, sum, hidden, residual)
	if T > 1 {
		m.free(in, fullH, fullR)
	}
	return m.b.Reshape(heads, 2, rows/2*NumCodebooks, LogitWidth)
}

// free releases activations the backbone made and no longer needs, so
// their device memory is reused at once by the next layer's instead of
// waiting for a garbage collection (on the CUDA backend a prefill's
// dropped activations filled the allocator's cache twice per 80-position
// prefill, and each miss then forced a collection of about 1.5 ms with
// the GPU idle: H200, 2026-11-30, docs/performance.md). The backbone's
// input (the caller's) and nil are skipped.
func (m *Model) free(in compute.Tensor, ts ...compute.Tensor) {
	for _, t := range ts {
		if t != nil && t != in {
			m.b.Free(t)
		}
	}
}

// guide applies classifier-free guidance, uncond + (cond − uncond)·scale,
// and masks the pad column 1025 to −inf. logits holds the conditional
// rows, then the unconditional ones (9 per utterance, Batch: several).
func guide(logits []float32, scale float32) []float32 {
	n := len(logits) / 2
	out := make([]float32, n)
	cond, uncond := logits[:n], logits[n:2*n]
	ninf := float32(math.Inf(-1))
	for i := range out {
		out[i] = uncond[i] + (cond[i]-uncond[i])*scale
		if i%LogitWidth >= MASK {
			out[i] = ninf
		}
	}
	return out
}

// Prefill feeds the prefix [2, L, d] and the first delayed columns (one
// all-MASK column without an audio prefix) and returns the CFG logits of
// the last position.
func (m *Model) Prefill(st *State, prefix compute.Tensor, cols [][NumCodebooks]int32, cfgScale float32, hook LayerHook) ([]float32, error) {
	if st.pos != 0 {
		return nil, fmt.Errorf("prefill on a state that already holds %d positions", st.pos)
	}
	emb, err := m.embedColumns(cols)
	if err != nil {
		return nil, err
	}
	return m.forward(st, m.b.Concat(1, prefix, emb), cfgScale, hook)
}

// Step feeds one delayed column and returns the CFG logits for the next.
func (m *Model) Step(st *State, col [NumCodebooks]int32, cfgScale float32, hook LayerHook) ([]float32, error) {
	emb, err := m.embedColumns([][NumCodebooks]int32{col})
	if err != nil {
		return nil, err
	}
	return m.forward(st, emb, cfgScale, hook)
}

func negInf() float64 { return math.Inf(-1) }

// HasConditioner reports whether the model conditions on name (the
// transformer and hybrid checkpoints share the list, custom ones may not).
func (m *Model) HasConditioner(name string) bool { return m.prefix.has(name) }
