package dac

import (
	"errors"
	"sync"

	"zonostream/engine/compute"
)

// A stream's first emission pushes its first frames through every stage
// of the stateful decoder from the same empty state, so on a backend that
// records graphs (compute.GraphOps) its work is the same every time: about
// 220 small kernels on the vocoder's lane, on the path to an utterance's
// first sample. Replayed as a graph the first emission took 1.22–1.30 ms
// against 1.56–1.73 ms launched op by op (H200, 2026-11-30; its kernels
// run beside the decode step's, so the rest is not launch cost). A pushGraph records that push once per first-emission
// length and replays it:
//
//   - its input is a tensor made before the recording, into which each
//     replay's codebook entries are written (compute.F32Writer);
//   - the recording leaves a template state: the stages' counters after the
//     push and their carried columns, whose storage the graph pins and each
//     replay rewrites;
//   - a replayed stream gets a copy of the template whose carried columns
//     are new handles on that storage (streamOp.viewed). Its next push
//     joins them into tensors of its own, as it joins any carried columns.
//
// While a stream still holds views, another replay would overwrite them,
// so a pushGraph serves one stream at a time (busy); a stream that finds
// it busy pushes op by op, as every stream does on the CPU backend. All
// of this happens under the model's push lock, which also keeps another
// stream's work off the lane while a graph is being recorded (a recording
// takes everything queued on the stream).
//
// The replayed work is the recorded push's, kernel for kernel, so the
// samples equal an op-by-op push's bit for bit.
type pushGraph struct {
	in   compute.Tensor // F32 [1, n_codebooks·dim, frames]: the replay's codebook entries
	g    compute.Graph
	tpl  *decoderState  // the stages after the recorded push (carried columns pinned by g)
	y    compute.Tensor // the recorded push's samples (pinned by g)
	busy bool           // a stream holds views of the carried columns
}

// pushGraphs are a model's recorded first pushes, by length in frames.
type pushGraphs struct {
	mu      sync.Mutex // the model's push lock (see pushGraph)
	byLen   map[int]*pushGraph
	seen    map[int]bool // lengths pushed op by op once: recorded the next time
	failed  bool         // a recording failed: op by op from now on
	replays int          // first pushes that replayed a recording
}

// FirstPushGraphs reports how many first pushes the model has recorded
// and how many streams' first pushes replayed one (pushGraph).
func (m *Model) FirstPushGraphs() (recorded, replayed int) {
	m.graphs.mu.Lock()
	defer m.graphs.mu.Unlock()
	return len(m.graphs.byLen), m.graphs.replays
}

// withPushLock runs f on the backend (compute.Run) under the push lock,
// which it releases even when f panics (a failed kernel launch, out of
// memory): the engine recovers such a panic and Resets the stream, which
// takes the lock again.
func (m *Model) withPushLock(f func()) {
	m.graphs.mu.Lock()
	defer m.graphs.mu.Unlock()
	compute.Run(m.be, f)
}

// FirstEmissionFrames is how many frames a stream under sc has when its
// first emission goes out (Push), if they arrive one at a time: the length
// a recorded first push is for. However they arrive, the first emission
// goes out with the push that brings the stream to this many frames
// (Push emits once the stream holds enough), so the engine knows which
// frame starts an utterance's first audio and can hold decoding there.
func (m *Model) FirstEmissionFrames(sc StreamConfig) int {
	hop := m.cfg.HopLength
	want := sc.want(0)*hop - (hop - 1)
	return max(1, (want+m.field.RightSamples+hop-1)/hop)
}

// graphOps is the model's backend as a graph recorder fed with floats, or
// nil where it is not one.
func (m *Model) graphOps() (compute.GraphOps, compute.F32Writer) {
	gops, ok := m.be.(compute.GraphOps)
	w, ok2 := m.be.(compute.F32Writer)
	if !ok || !ok2 {
		return nil, nil
	}
	return gops, w
}

// RecordFirstPush records the first push of streams under sc now, so
// that no stream's first emission pays for the recording (engine.Warmup
// calls it). Where the backend records no graphs it does nothing. The
// first push of a length runs op by op once before it is recorded (it
// makes the weights' device layouts, which a recording would keep to
// itself): with silence here, if no stream has pushed that length yet.
func (m *Model) RecordFirstPush(sc StreamConfig) error {
	gops, _ := m.graphOps()
	if gops == nil {
		return nil
	}
	pg := &m.graphs
	pg.mu.Lock()
	defer pg.mu.Unlock()
	T := m.FirstEmissionFrames(sc)
	if pg.byLen[T] != nil || pg.failed {
		return nil
	}
	var err error
	compute.Run(m.be, func() {
		if !pg.seen[T] {
			var st *decoderState
			if st, err = m.decoder.newState(); err != nil {
				return
			}
			silence := make([][]int32, len(m.codebooks))
			for k := range silence {
				silence[k] = make([]int32, T)
			}
			if y := st.push(m.be, m.fromCodes(silence)); y != nil {
				m.be.Free(y)
			}
			st.free(m.be)
			pg.markSeen(T)
		}
		_, err = m.pushGraph(gops, T)
	})
	return err
}

func (pg *pushGraphs) markSeen(T int) {
	if pg.seen == nil {
		pg.seen = map[int]bool{}
	}
	pg.seen[T] = true
}

// pushGraph returns the recorded first push of T frames, recording it if
// a push of that length has run op by op before; nil (and no error) when
// it has not. The caller holds the push lock.
func (m *Model) pushGraph(gops compute.GraphOps, T int) (*pushGraph, error) {
	pg := &m.graphs
	if g := pg.byLen[T]; g != nil || !pg.seen[T] {
		return g, nil
	}
	g, err := m.recordFirstPush(gops, T)
	if err != nil {
		pg.failed = true
		return nil, err
	}
	if pg.byLen == nil {
		pg.byLen = map[int]*pushGraph{}
	}
	pg.byLen[T] = g
	return g, nil
}

// firstPush runs a stream's first push of codes through a recorded graph
// when it can, and reports whether it did; the caller holds the push lock.
// Only the length a stream under sc first emits at is recorded, the
// second time it is pushed (RecordFirstPush does both ahead of time).
func (m *Model) firstPush(codes [][]int32, sc StreamConfig) (*decoderState, compute.Tensor, bool) {
	gops, w := m.graphOps()
	pg := &m.graphs
	T := len(codes[0])
	if gops == nil || pg.failed || T != m.FirstEmissionFrames(sc) {
		return nil, nil, false
	}
	g, err := m.pushGraph(gops, T)
	if g == nil || err != nil {
		pg.markSeen(T)
		return nil, nil, false
	}
	if g.busy {
		return nil, nil, false
	}
	w.WriteF32(g.in, m.entries(codes))
	if err := g.g.Launch(); err != nil {
		return nil, nil, false
	}
	g.busy = true
	pg.replays++
	st := &decoderState{graph: g}
	for _, op := range g.tpl.ops {
		c, v := op.viewed(m.be)
		st.ops = append(st.ops, c)
		if v != nil {
			st.views = append(st.views, v)
		}
	}
	return st, m.be.Reshape(g.y, g.y.Shape()...), true
}

// recordFirstPush records the first push of T frames from an empty state.
func (m *Model) recordFirstPush(gops compute.GraphOps, T int) (*pushGraph, error) {
	be := m.be
	tpl, err := m.decoder.newState()
	if err != nil {
		return nil, err
	}
	g := &pushGraph{in: be.Zeros(1, len(m.codebooks)*m.cfg.CodebookDim, T), tpl: tpl}
	g.g, err = gops.Capture(func() {
		g.y = tpl.push(be, m.outAll.forward(be, g.in))
	})
	if err == nil && g.y == nil {
		g.g.Destroy()
		err = errNoEmission
	}
	if err != nil {
		be.Free(g.in)
		return nil, err
	}
	return g, nil
}

// errNoEmission: a recorded first push produced no samples (its frames
// do not reach past the decoder's right field), so there is nothing to
// replay.
var errNoEmission = errors.New("dac: the recorded first push emits nothing")

// releaseGraph hands a replayed push's graph back once no stage of st
// holds a view of its carried columns any more (after the stream's next
// push has joined them, or when the state is freed). The caller holds the
// push lock.
func (st *decoderState) releaseGraph() {
	if st.graph == nil {
		return
	}
	held := map[compute.Tensor]bool{}
	for _, op := range st.ops {
		if c := carriedOf(op); c != nil && c.prev != nil {
			held[c.prev] = true
		}
	}
	for _, v := range st.views {
		if held[v] {
			return
		}
	}
	st.graph.busy = false
	st.graph, st.views = nil, nil
}

// carriedOf is the carried columns of a stage, nil for a stateless one.
func carriedOf(op streamOp) *carried {
	switch s := op.(type) {
	case *convState:
		return &s.carried
	case *convTState:
		return &s.carried
	case *resState:
		return &s.carried
	}
	return nil
}
