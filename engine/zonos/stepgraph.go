package zonos

import (
	"fmt"
	"time"

	"zonostream/engine/compute"
)

// stepGraph is one decode step — embedding of the fed columns, the
// backbone, the heads, guidance and sampling — recorded as a device graph
// on one State (compute.GraphOps) and replayed for every later step of
// every utterance that gets the state: a single utterance's step (a
// Batch records its own, batchgraph.go). The layout is written for n
// utterances, n = 1 here. What changes between steps lives in one I32
// input tensor written before each replay:
//
//	[0, 9n)              the fed columns, codebook-major [9, n]
//	[9n, 10n)            the position
//	[10n, 10n+4)         the sampler's seed and Philox counter, low word first
//	[10n+4, 10n+4+9n·w)  the repetition windows [n·9, w] (utterance-major),
//	                     −1 where the history is shorter
//	[10n+4+9n·w, +3n)    per utterance the generate loop's state before the
//	                     step: remaining steps, stopping (0 or 1), masked
//	                     (compute.StepFeed)
//
// The graph ends with device-side token feedback
// (compute.GraphOps FeedAt): it writes the next step's input from the
// sampled tokens, so the generate loop can queue step s+1 before it has
// read step s's tokens (step with ahead). out holds, for the host, the raw
// tokens, the column written and the loop state after the step.
//
// Everything else (guidance scale, sampler knobs, whether EOS is allowed)
// is baked into the graph, so it is recorded again when those change.
type stepGraph struct {
	key stepKey
	n   int // utterances
	g   compute.Graph
	in  compute.Tensor // I32, layout above
	tok compute.Tensor // I32 [9n]: the replay's sampled tokens, utterance-major
	out compute.Tensor // I32 [n, compute.FeedOut] from FeedAt (n = 1), else nil
	buf []int32

	// pending: a step is queued whose input the device wrote (step with
	// ahead); next is the column it was fed and nextState the loop state
	// it started from, for checking against the host's loop.
	pending   bool
	next      [NumCodebooks]int32
	nextState [compute.LoopWords]int32
}

// stepKey is what a recorded step bakes in besides the state.
type stepKey struct {
	cfg     float32
	spec    compute.SampleSpec
	padFrom int
}

// Offsets into the step's input tensor for n utterances (for n = 1 the
// position is one word, which FeedAt advances).
func inPos(n int) int  { return NumCodebooks * n }
func inRNG(n int) int  { return (NumCodebooks + 1) * n }
func inHist(n int) int { return (NumCodebooks+1)*n + 4 }

// inState is where the loop state starts for n utterances and window w.
func inState(n, w int) int { return inHist(n) + NumCodebooks*n*w }

// graphable reports whether a decode step with these sampler knobs can be
// replayed: the repetition window must have a fixed width (window 0 means
// the whole, growing history).
func graphable(spec compute.SampleSpec) bool {
	return spec.Penalty == 1 || spec.Window > 0
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
	sg := &stepGraph{key: k, n: n, buf: make([]int32, inState(n, w)+compute.LoopWords*n)}
	sg.in = m.b.FromI32(sg.buf, len(sg.buf))
	var err error
	sg.g, err = g.Capture(func() {
		ids := m.b.Slice(sg.in, 0, 0, NumCodebooks*n)
		pos := m.b.Slice(sg.in, 0, inPos(n), inPos(n)+n)
		rng := m.b.Slice(sg.in, 0, inRNG(n), inRNG(n)+4)
		var hist compute.Tensor
		if w > 0 {
			hist = m.b.Reshape(m.b.Slice(sg.in, 0, inHist(n), inHist(n)+NumCodebooks*n*w), NumCodebooks*n, w)
		}
		heads := m.backbone(st, m.embedColumn(ids), compute.Positions{Dev: pos}, nil)
		logits := ops.Guide(heads, k.cfg, k.padFrom, EOS, true)
		sg.tok = g.SampleAt(logits, hist, k.spec, rng)
		var inc uint32
		if k.spec.Temperature > 0 {
			inc = uint32((NumCodebooks*n*LogitWidth + 3) / 4)
		}
		sg.out = g.FeedAt(sg.tok, sg.in, compute.StepFeed{N: n, Pos: inPos(n), RNG: inRNG(n), Hist: inHist(n),
			Window: w, State: inState(n, w), Inc: inc, EOS: EOS, MASK: MASK})
	})
	if err != nil {
		m.b.Free(sg.in)
		return nil, fmt.Errorf("recording the decode step: %w", err)
	}
	return sg, nil
}

// replay runs the recorded step for the column col at st.pos, which then
// advances, and returns its 9 tokens; history is the repetition window as
// runTokens builds it (each row at most w long; nil: none yet).
func (sg *stepGraph) replay(m *Model, st *State, col [NumCodebooks]int32, history [][]int32, seed, counter uint64) ([]int32, error) {
	if sg.pending {
		return nil, fmt.Errorf("decode step replayed while a queued one is not collected")
	}
	if err := sg.setInput(m, st, [][NumCodebooks]int32{col}, [][][]int32{history}, nil, seed, counter, nil); err != nil {
		return nil, err
	}
	if err := sg.writeAndLaunch(m); err != nil {
		return nil, err
	}
	// The read waits outside the hand-off: on the CUDA backend the owner
	// thread is then free, while the step runs, to launch another lane's
	// work (the vocoder, compute.Laned).
	tok := m.b.ReadI32(sg.tok)
	st.pos++
	return tok, nil
}

// writeAndLaunch copies sg.buf into the step's input and launches the
// step, in one hand-off to the device.
func (sg *stepGraph) writeAndLaunch(m *Model) error {
	g := m.b.(compute.GraphOps)
	var err error
	m.onDevice(func() {
		g.WriteI32(sg.in, sg.buf)
		err = sg.g.Launch()
	})
	return err
}

// setInput fills sg.buf, the host copy of the step's input tensor: the
// utterances' positions are pos (nil: st.pos for all); loop is the
// generate loop's state per utterance (nil: none, zeros).
func (sg *stepGraph) setInput(m *Model, st *State, cols [][NumCodebooks]int32, histories [][][]int32, pos []int, seed, counter uint64, loop []loopState) error {
	n := sg.n
	if len(cols) != n || len(histories) != n || (pos != nil && len(pos) != n) {
		return fmt.Errorf("decode step of %d utterances fed %d columns, %d histories and %d positions", n, len(cols), len(histories), len(pos))
	}
	if err := checkColumns(cols); err != nil {
		return err
	}
	b := sg.buf
	for u := 0; u < n; u++ {
		p := st.pos
		if pos != nil {
			p = pos[u]
		}
		if p < 0 || p+1 > st.maxLen {
			return fmt.Errorf("sequence of %d positions exceeds the %d the state was made for", p+1, st.maxLen)
		}
		b[inPos(n)+u] = int32(p)
	}
	for u, col := range cols {
		for k, c := range col {
			b[k*n+u] = c
		}
	}
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
	at := inState(n, histWidth(sg.key.spec))
	for u := 0; u < n; u++ {
		var l [compute.LoopWords]int32
		if u < len(loop) {
			l = loop[u].flat()
		}
		copy(b[at+compute.LoopWords*u:], l[:])
	}
	return nil
}

// step runs one decode step of a single utterance with device-side token
// feedback. Unless a step is already queued (pending), it writes the input
// and launches; then it queues the read of the step's tokens and, with
// ahead, launches the next step behind it — fed by FeedAt from the
// device's own copy of this step's tokens — before it waits for the read.
// The generate loop passes ahead only where FeedAt writes what it would
// (a column of unknown cells, a step that will run). A queued step is
// checked against what the loop then feeds it.
func (sg *stepGraph) step(m *Model, st *State, col [NumCodebooks]int32, history [][]int32, seed, counter uint64, loop loopState, ahead bool) ([]int32, error) {
	g := m.b.(compute.GraphOps)
	if sg.pending {
		sg.pending = false
		if col != sg.next {
			return nil, fmt.Errorf("device token feedback fed %v, the generate loop wrote %v", sg.next, col)
		}
		if l := loop.flat(); l != sg.nextState {
			return nil, fmt.Errorf("device token feedback at loop state %v, the generate loop at %v", sg.nextState, l)
		}
	} else {
		if err := sg.setInput(m, st, [][NumCodebooks]int32{col}, [][][]int32{history}, nil, seed, counter, []loopState{loop}); err != nil {
			return nil, err
		}
		if err := sg.writeAndLaunch(m); err != nil {
			return nil, err
		}
	}
	collect := g.ReadI32Async(sg.out)
	ahead = ahead && st.pos+2 <= st.maxLen
	var err error
	if ahead {
		m.onDevice(func() { err = sg.g.Launch() })
	}
	out := collect()
	st.pos++
	if err != nil {
		return nil, err
	}
	if ahead {
		sg.pending = true
		copy(sg.next[:], out[NumCodebooks:2*NumCodebooks])
		copy(sg.nextState[:], out[2*NumCodebooks:])
	}
	return out[:NumCodebooks], nil
}

// ReplayTime is a measurement for zonos bench: the device time per step
// of k steps replayed back to back from the column col, each fed by the
// one before through device-side token feedback, with no token read-back
// or host work in between. What a step through Step takes beyond it is the
// host round trip. The decoder must have room for k more positions; close
// it afterwards. ok is false when the step is not replayed (no graphs on
// this backend, or knobs that need op by op).
func (d *Decoder) ReplayTime(timer compute.Timer, col [NumCodebooks]int32, history [][]int32, k int) (per time.Duration, ok bool, err error) {
	dt, isDev := d.ts.(*deviceTokens)
	if !isDev || k <= 0 {
		return 0, false, nil
	}
	sg := dt.stepGraph()
	if sg == nil || sg.out == nil {
		return 0, false, nil
	}
	if d.st.pos+k > d.st.maxLen {
		return 0, false, fmt.Errorf("%d replays from position %d exceed the %d positions of the decoder", k, d.st.pos, d.st.maxLen)
	}
	if err := sg.setInput(d.m, d.st, [][NumCodebooks]int32{col}, [][][]int32{history}, nil, dt.seed, dt.counter,
		[]loopState{{remaining: k + NumCodebooks}}); err != nil {
		return 0, false, err
	}
	g := d.m.b.(compute.GraphOps)
	d.m.onDevice(func() { g.WriteI32(sg.in, sg.buf) })
	total := timer.Time(func() {
		for i := 0; i < k && err == nil; i++ {
			d.m.onDevice(func() { err = sg.g.Launch() })
		}
	})
	d.st.pos += k
	if err != nil {
		return 0, false, err
	}
	return total / time.Duration(k), true, nil
}

func (sg *stepGraph) destroy(b compute.Backend) {
	sg.g.Destroy()
	b.Free(sg.in)
}
