package zonos

import "zonostream/engine/compute"

// statePool keeps the inference states of finished utterances on backends
// with compute.GraphOps. A recorded decode step reads and writes one
// state's caches at fixed device addresses, so reusing the state is what
// lets the next utterance replay the step instead of recording it again
// (recording costs an eager step plus the graph's instantiation). States
// are made with room for stateQuantum-rounded lengths so utterances of
// similar length share one; at most statePoolSize idle states are kept.
type statePool struct {
	idle []*State
}

const (
	stateQuantum  = 1024
	statePoolSize = 2
)

// acquireState returns a state with room for n positions, empty: from the
// pool when one is big enough (the smallest such), else a new one.
func (m *Model) acquireState(n int) *State {
	if _, ok := m.b.(compute.GraphOps); !ok {
		return m.NewState(n)
	}
	m.mu.Lock()
	best := -1
	for i, s := range m.states.idle {
		if s.maxLen >= n && (best < 0 || s.maxLen < m.states.idle[best].maxLen) {
			best = i
		}
	}
	var st *State
	if best >= 0 {
		st = m.states.idle[best]
		m.states.idle = append(m.states.idle[:best], m.states.idle[best+1:]...)
	}
	m.mu.Unlock()
	if st == nil {
		return m.NewState((n + stateQuantum - 1) / stateQuantum * stateQuantum)
	}
	m.onDevice(func() { st.reset(m.b.(compute.GraphOps)) }) // a clear per conv and SSM cache, in one hand-off to the owner thread
	return st
}

// releaseState gives a state back after its utterance; the pool keeps the
// most recent ones and frees the rest.
func (m *Model) releaseState(st *State) {
	if _, ok := m.b.(compute.GraphOps); !ok {
		return
	}
	m.mu.Lock()
	m.states.idle = append(m.states.idle, st)
	var drop []*State
	if n := len(m.states.idle); n > statePoolSize {
		drop = append(drop, m.states.idle[:n-statePoolSize]...)
		m.states.idle = append([]*State(nil), m.states.idle[n-statePoolSize:]...)
	}
	m.mu.Unlock()
	for _, s := range drop {
		s.free(m.b)
	}
}

// FreeStates frees the idle states the model keeps for later utterances,
// with their recorded steps: their device memory goes back to the backend,
// and the next utterance builds and records afresh (zonos bench does this
// after timing a cold first utterance, so the decode-step figures start
// cold too).
func (m *Model) FreeStates() {
	m.mu.Lock()
	idle := m.states.idle
	m.states.idle = nil
	m.mu.Unlock()
	for _, s := range idle {
		s.free(m.b)
	}
}

// reset empties a state for a new utterance: the recurrent Mamba2 states
// are zeroed; the KV caches need not be, since attention only reads the
// positions the new utterance writes. A step the last utterance queued
// ahead and never collected (it was cancelled) runs before the clearing,
// in stream order, and is forgotten.
func (s *State) reset(g compute.GraphOps) {
	if s.graph != nil {
		s.graph.pending = false
	}
	for _, l := range s.layers {
		if l.conv != nil {
			g.Clear(l.conv)
			g.Clear(l.ssm)
		}
	}
	s.pos = 0
}

// free releases the state's device memory and its recorded step.
func (s *State) free(b compute.Backend) {
	if s.graph != nil {
		s.graph.destroy(b)
		s.graph = nil
	}
	for _, l := range s.layers {
		for _, t := range []compute.Tensor{l.k, l.v, l.conv, l.ssm} {
			if t != nil {
				b.Free(t)
			}
		}
	}
	s.layers = nil
}

// rowsView is a state of k utterances whose caches are the first 2k rows
// of s's (compute.RowViewer: no copy), for a batch laid out in them as k
// utterances are (conditional rows [0, k), unconditional [k, 2k)). It
// owns no storage: its free releases only its views.
func (s *State) rowsView(v compute.RowViewer, k int) *State {
	st := &State{rows: 2 * k, maxLen: s.maxLen}
	for _, l := range s.layers {
		var vl layerState
		for _, t := range [][2]*compute.Tensor{{&vl.k, &l.k}, {&vl.v, &l.v}, {&vl.conv, &l.conv}, {&vl.ssm, &l.ssm}} {
			if *t[1] != nil {
				*t[0] = v.Rows(*t[1], 2*k)
			}
		}
		st.layers = append(st.layers, vl)
	}
	return st
}

// copyRow copies row src of one's caches (KV, conv and SSM states) into
// row dst of s's. Both have the same layers; they may be the same state
// (rows of one batch moving) or of different cache lengths (a pooled
// decoder's state adopted into a batch): the KV caches' first
// min(s.maxLen, one.maxLen) positions are copied, which hold every
// position the row has filled wherever it fits s (Batch.Adopt checks).
func (s *State) copyRow(b compute.Backend, dst int, one *State, src int) {
	n := min(s.maxLen, one.maxLen)
	for i, l := range s.layers {
		from := one.layers[i]
		for _, t := range [][2]compute.Tensor{{l.k, from.k}, {l.v, from.v}} {
			if t[0] == nil {
				continue
			}
			// [rows, maxLen, Hk, Dh] as [rows·maxLen, Hk·Dh]: the row's
			// positions are consecutive rows of the view.
			ds, ss := t[0].Shape(), t[1].Shape()
			to := b.Reshape(t[0], ds[0]*ds[1], ds[2]*ds[3])
			rows := b.Reshape(t[1], ss[0]*ss[1], ss[2]*ss[3])
			pos := b.Slice(rows, 0, src*ss[1], src*ss[1]+n)
			b.CopyInto(to, 0, dst*ds[1], pos)
			for _, v := range []compute.Tensor{pos, rows, to} { // the views' references, not the caches
				b.Free(v)
			}
		}
		for _, t := range [][2]compute.Tensor{{l.conv, from.conv}, {l.ssm, from.ssm}} {
			if t[0] == nil {
				continue
			}
			row := b.Slice(t[1], 0, src, src+1)
			b.CopyInto(t[0], 0, dst, row)
			b.Free(row)
		}
	}
}
