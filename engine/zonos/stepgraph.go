package zonos

import (
	"fmt"
	"os"
	"time"

	"zonostream/engine/compute"
)

// stepGraph is one decode step — embedding of the fed columns, the
// backbone, the heads, guidance and sampling — recorded as a device graph
// on one State (compute.GraphOps) and replayed for every later step of
// every utterance that gets the state. A state of n utterances (Batch;
// n = 1 for Generate) records all of them in one graph. What changes
// between steps lives in one I32 input tensor written before each replay:
//
//	[0, 9n)            the fed columns, codebook-major [9, n]
//	[9n]               the position (st.pos, shared: Batch runs in lockstep)
//	[9n+1, 9n+5)       the sampler's seed and Philox counter, low word first
//	[9n+5, 9n+5+9n·w)  the repetition windows [n·9, w] (utterance-major),
//	                   −1 where the history is shorter
//
// Everything else (guidance scale, sampler knobs, whether EOS is allowed)
// is baked into the graph, so it is recorded again when those change.
type stepGraph struct {
	key stepKey
	n   int // utterances
	g   compute.Graph
	in  compute.Tensor // I32, layout above
	tok compute.Tensor // I32 [9n]: the replay's sampled tokens, utterance-major
	buf []int32
}

// stepKey is what a recorded step bakes in besides the state.
type stepKey struct {
	cfg     float32
	spec    compute.SampleSpec
	padFrom int
}

// Offsets into the step's input tensor for n utterances.
func inPos(n int) int  { return NumCodebooks * n }
func inRNG(n int) int  { return NumCodebooks*n + 1 }
func inHist(n int) int { return NumCodebooks*n + 5 }

// graphsOff is ZONOS_CUDA_GRAPH=0: every decode step op by op (for
// before/after measurements and bisecting).
var graphsOff = os.Getenv("ZONOS_CUDA_GRAPH") == "0"

// graphable reports whether a decode step with these sampler knobs can be
// replayed: the repetition window must have a fixed width (window 0 means
// the whole, growing history).
func graphable(spec compute.SampleSpec) bool {
	return !graphsOff && (spec.Penalty == 1 || spec.Window > 0)
}

// histWidth is the width of the recorded repetition window (0: none).
func histWidth(spec compute.SampleSpec) int {
	if spec.Penalty == 1 {
		return 0
	}
	return spec.Window
}

// recordStep records the decode step for st (st.rows/2 utterances) under
// key k.
func (m *Model) recordStep(st *State, ops compute.SamplerOps, k stepKey) (*stepGraph, error) {
	g := m.b.(compute.GraphOps)
	n, w := st.rows/2, histWidth(k.spec)
	sg := &stepGraph{key: k, n: n, buf: make([]int32, inHist(n)+NumCodebooks*n*w)}
	sg.in = m.b.FromI32(sg.buf, len(sg.buf))
	var err error
	sg.g, err = g.Capture(func() {
		ids := m.b.Slice(sg.in, 0, 0, NumCodebooks*n)
		pos := m.b.Slice(sg.in, 0, inPos(n), inPos(n)+1)
		rng := m.b.Slice(sg.in, 0, inRNG(n), inRNG(n)+4)
		var hist compute.Tensor
		if w > 0 {
			hist = m.b.Reshape(m.b.Slice(sg.in, 0, inHist(n), inHist(n)+NumCodebooks*n*w), NumCodebooks*n, w)
		}
		heads := m.backbone(st, m.embedColumn(ids), position{dev: pos}, nil)
		logits := ops.Guide(heads, k.cfg, k.padFrom, EOS, true)
		sg.tok = g.SampleAt(logits, hist, k.spec, rng)
	})
	if err != nil {
		m.b.Free(sg.in)
		return nil, fmt.Errorf("recording the decode step: %w", err)
	}
	return sg, nil
}

// replay runs the recorded step for the columns cols (one per utterance)
// at st.pos and returns the 9 tokens of each utterance, utterance-major.
// histories[u] is utterance u's repetition window as runTokens builds it
// (each row at most w long; nil: none yet).
func (sg *stepGraph) replay(m *Model, st *State, cols [][NumCodebooks]int32, histories [][][]int32, seed, counter uint64) ([]int32, error) {
	if err := sg.setInput(m, st, cols, histories, seed, counter); err != nil {
		return nil, err
	}
	g := m.b.(compute.GraphOps)
	var err error
	m.onDevice(func() {
		g.WriteI32(sg.in, sg.buf)
		err = sg.g.Launch()
	})
	if err != nil {
		return nil, err
	}
	// The read waits outside the hand-off: on the CUDA backend the owner
	// thread is then free, while the step runs, to launch another lane's
	// work (the vocoder, compute.Laned).
	tok := m.b.ReadI32(sg.tok)
	st.pos++
	return tok, nil
}

// setInput fills sg.buf, the host copy of the step's input tensor.
func (sg *stepGraph) setInput(m *Model, st *State, cols [][NumCodebooks]int32, histories [][][]int32, seed, counter uint64) error {
	n := sg.n
	if len(cols) != n || len(histories) != n {
		return fmt.Errorf("decode step of %d utterances fed %d columns and %d histories", n, len(cols), len(histories))
	}
	if err := checkColumns(cols); err != nil {
		return err
	}
	if st.pos+1 > st.maxLen {
		return fmt.Errorf("sequence of %d positions exceeds the %d the state was made for", st.pos+1, st.maxLen)
	}
	b := sg.buf
	for u, col := range cols {
		for k, c := range col {
			b[k*n+u] = c
		}
	}
	b[inPos(n)] = int32(st.pos)
	r := inRNG(n)
	b[r], b[r+1] = int32(uint32(seed)), int32(uint32(seed>>32))
	b[r+2], b[r+3] = int32(uint32(counter)), int32(uint32(counter>>32))
	if w := histWidth(sg.key.spec); w > 0 {
		for u, history := range histories {
			for k := 0; k < NumCodebooks; k++ {
				row := b[inHist(n)+(u*NumCodebooks+k)*w:][:w]
				var h []int32
				if history != nil {
					h = history[k]
				}
				if len(h) > w {
					h = h[len(h)-w:]
				}
				pad := w - len(h)
				for i := 0; i < pad; i++ {
					row[i] = -1
				}
				copy(row[pad:], h)
			}
		}
	}
	return nil
}

// ReplayTime is a measurement for zonos bench: the device time of the
// recorded decode step alone, replayed k times back to back on the same
// input with no token read-back or host work between replays, per replay.
// What a real step takes beyond it is the host round trip that device-side
// token feedback would remove. The replays leave the state where no
// utterance would: close the decoder afterwards. ok is false when the
// step is not replayed (no graphs on this backend, or knobs that need op
// by op).
func (d *Decoder) ReplayTime(timer compute.Timer, col [NumCodebooks]int32, history [][]int32, k int) (per time.Duration, ok bool, err error) {
	dt, isDev := d.ts.(*deviceTokens)
	if !isDev || k <= 0 {
		return 0, false, nil
	}
	sg := dt.stepGraph()
	if sg == nil {
		return 0, false, nil
	}
	if err := sg.setInput(d.m, d.st, [][NumCodebooks]int32{col}, [][][]int32{history}, dt.seed, dt.counter); err != nil {
		return 0, false, err
	}
	g := d.m.b.(compute.GraphOps)
	d.m.onDevice(func() { g.WriteI32(sg.in, sg.buf) })
	total := timer.Time(func() {
		for i := 0; i < k && err == nil; i++ {
			d.m.onDevice(func() { err = sg.g.Launch() })
		}
	})
	if err != nil {
		return 0, false, err
	}
	return total / time.Duration(k), true, nil
}

func (sg *stepGraph) destroy(b compute.Backend) {
	sg.g.Destroy()
	b.Free(sg.in)
}
