package zonos

import (
	"fmt"
	"os"

	"zonostream/engine/compute"
)

// stepGraph is one decode step — embedding of the fed column, the
// backbone, the heads, guidance and sampling — recorded as a device graph
// on one State (compute.GraphOps) and replayed for every later step of
// every utterance that gets the state. What changes between steps lives
// in one I32 input tensor written before each replay:
//
//	[0, 9)        the fed column's codes
//	[9]           the position (st.pos)
//	[10, 14)      the sampler's seed and Philox counter, low word first
//	[14, 14+9·w)  the repetition window [9, w], −1 where the history is shorter
//
// Everything else (guidance scale, sampler knobs, whether EOS is allowed)
// is baked into the graph, so it is recorded again when those change.
type stepGraph struct {
	key stepKey
	g   compute.Graph
	in  compute.Tensor // I32 [14 + 9·w], layout above
	tok compute.Tensor // I32 [9]: the replay's sampled tokens
	buf []int32
}

// stepKey is what a recorded step bakes in besides the state.
type stepKey struct {
	cfg     float32
	spec    compute.SampleSpec
	padFrom int
}

const (
	inPos  = NumCodebooks
	inRNG  = NumCodebooks + 1
	inHist = NumCodebooks + 5
)

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

// recordStep records the decode step for st under key k.
func (m *Model) recordStep(st *State, ops compute.SamplerOps, k stepKey) (*stepGraph, error) {
	g := m.b.(compute.GraphOps)
	w := histWidth(k.spec)
	sg := &stepGraph{key: k, buf: make([]int32, inHist+NumCodebooks*w)}
	sg.in = m.b.FromI32(sg.buf, len(sg.buf))
	var err error
	sg.g, err = g.Capture(func() {
		ids := m.b.Slice(sg.in, 0, 0, NumCodebooks)
		pos := m.b.Slice(sg.in, 0, inPos, inPos+1)
		rng := m.b.Slice(sg.in, 0, inRNG, inRNG+4)
		var hist compute.Tensor
		if w > 0 {
			hist = m.b.Reshape(m.b.Slice(sg.in, 0, inHist, inHist+NumCodebooks*w), NumCodebooks, w)
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

// replay runs the recorded step for column col at st.pos and returns its
// nine tokens. history is the repetition window as runTokens builds it
// (each row at most w long).
func (sg *stepGraph) replay(m *Model, st *State, col [NumCodebooks]int32, history [][]int32, seed, counter uint64) ([]int32, error) {
	if err := checkColumns([][NumCodebooks]int32{col}); err != nil {
		return nil, err
	}
	if st.pos+1 > st.maxLen {
		return nil, fmt.Errorf("sequence of %d positions exceeds the %d the state was made for", st.pos+1, st.maxLen)
	}
	b := sg.buf
	copy(b, col[:])
	b[inPos] = int32(st.pos)
	b[inRNG], b[inRNG+1] = int32(uint32(seed)), int32(uint32(seed>>32))
	b[inRNG+2], b[inRNG+3] = int32(uint32(counter)), int32(uint32(counter>>32))
	if w := histWidth(sg.key.spec); w > 0 {
		for k := 0; k < NumCodebooks; k++ {
			row := b[inHist+k*w : inHist+(k+1)*w]
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
	g := m.b.(compute.GraphOps)
	var tok []int32
	var err error
	m.onDevice(func() {
		g.WriteI32(sg.in, b)
		err = sg.g.Launch()
	})
	if err != nil {
		return nil, err
	}
	// The read waits outside the hand-off: on the CUDA backend the owner
	// thread is then free, while the step runs, to launch another lane's
	// work (the vocoder, compute.Laned).
	tok = m.b.ReadI32(sg.tok)
	st.pos++
	return tok, nil
}

func (sg *stepGraph) destroy(b compute.Backend) {
	sg.g.Destroy()
	b.Free(sg.in)
}
