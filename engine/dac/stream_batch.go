package dac

import "zonostream/engine/compute"

// Stacked pushes: the stateful decoder (stream_state.go) run for several
// streams at once. At each stage, the streams whose work there has the
// same shape (stageKey: the same new columns, the same carried columns,
// the same counters) are stacked along the batch axis: their carried
// columns are joined into one tensor [B, C, ·], a copy of the stage runs
// its own single-stream code on the stack (one Window, one convolution
// for all B where each stream ran its own), and the columns it carries on
// are split back to the streams. Streams whose shapes differ run apart,
// each as its own push would. Between stages a stack stays whole while
// its streams stay together, as steady emissions of one chunk size do
// through every stage.
//
// Every op the stages use computes each batch row as it computes a batch
// of one (engine/compute/cpu loops over the rows with the same
// arithmetic; the CUDA kernels index the batch in the grid and choose
// their reduction order by the layer alone, gpu/tc.go), so every stream's
// samples are those of its own push, bit for bit on the CPU.

// part is the columns of several streams at one stage, stacked along the
// batch axis: x is [len(rows), C, m], rows the streams' indices. x is nil
// for finishing streams with no columns left for the stage (they still
// take its right padding).
type part struct {
	x    compute.Tensor
	rows []int
}

// stageKey is the shape of one stream's work at a stage: streams with
// equal keys run the same ops on tensors of the same shapes.
type stageKey struct {
	final     bool // finish rather than push
	nx, np    int  // new columns; carried columns (−1: none yet)
	skip, rem int  // a transposed convolution's outputs still to drop, and stride·in − out
}

func keyOf(op streamOp, nx int, final bool) stageKey {
	k := stageKey{final: final, nx: nx, np: -1}
	if c := carriedOf(op); c != nil && c.prev != nil {
		k.np = cols(c.prev)
	}
	if t, ok := op.(*convTState); ok {
		k.skip, k.rem = t.skip, t.stride*t.in-t.out
	}
	return k
}

// pushStacked runs parts through every stage of the streams' decoder
// states sts (one per row; those with final[row] finish) and returns the
// samples as parts of [B, 1, n] (rows that emit nothing are left out). It
// takes the parts' tensors. Each row's samples and state afterwards are
// those of its own st.push(x) (st.finish(x) when final).
func pushStacked(be compute.Backend, sts []*decoderState, final []bool, parts []part) []part {
	if len(parts) == 0 {
		return nil
	}
	for i := range sts[parts[0].rows[0]].ops {
		parts = stackedStage(be, i, sts, final, parts)
	}
	return parts
}

// stackedStage runs stage i for every row of parts, grouped by stageKey.
func stackedStage(be compute.Backend, i int, sts []*decoderState, final []bool, parts []part) []part {
	type group struct {
		key  stageKey
		rows []int
		x    compute.Tensor
	}
	var groups []*group
	byKey := map[stageKey]*group{}
	for _, p := range parts {
		for _, r := range p.rows {
			k := keyOf(sts[r].ops[i], cols(p.x), final[r])
			g := byKey[k]
			if g == nil {
				g = &group{key: k}
				byKey[k] = g
				groups = append(groups, g)
			}
			g.rows = append(g.rows, r)
		}
	}
	// Each group's input: a part whole where the group is exactly its
	// rows, else the group's rows cut from their parts and joined.
	type at struct{ part, row int }
	where := map[int]at{}
	for pi, p := range parts {
		for j, r := range p.rows {
			where[r] = at{pi, j}
		}
	}
	taken := make([]bool, len(parts))
	for _, g := range groups {
		first := where[g.rows[0]]
		if p := parts[first.part]; p.x == nil || (first.row == 0 && equalRows(p.rows, g.rows)) {
			g.x, taken[first.part] = p.x, true
			continue
		}
		rows := make([]compute.Tensor, len(g.rows))
		for j, r := range g.rows {
			w := where[r]
			if p := parts[w.part]; len(p.rows) == 1 {
				rows[j], taken[w.part] = p.x, true
			} else {
				rows[j] = be.Slice(p.x, 0, w.row, w.row+1)
			}
		}
		g.x = join(be, rows)
	}
	for pi, p := range parts {
		if !taken[pi] && p.x != nil {
			be.Free(p.x)
		}
	}
	var out []part
	for _, g := range groups {
		ops := make([]streamOp, len(g.rows))
		for j, r := range g.rows {
			ops[j] = sts[r].ops[i]
		}
		op := stack(be, ops)
		var y compute.Tensor
		if g.key.final {
			y = op.finish(be, g.x)
		} else {
			y = op.push(be, g.x)
		}
		unstack(be, op, ops)
		if y != nil || g.key.final {
			out = append(out, part{x: y, rows: g.rows})
		}
	}
	return out
}

func equalRows(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// join stacks tensors along the batch axis and frees them (one is
// returned as it is).
func join(be compute.Backend, ts []compute.Tensor) compute.Tensor {
	if len(ts) == 1 {
		return ts[0]
	}
	j := be.Concat(0, ts...)
	for _, t := range ts {
		be.Free(t)
	}
	return j
}

// stack returns the stage of several streams (ops: theirs, of equal
// keys) as one stage over their stack: a copy of ops[0] carrying all
// their carried columns joined along the batch axis, taken from them.
// One stream's stage is itself.
func stack(be compute.Backend, ops []streamOp) streamOp {
	if len(ops) == 1 {
		return ops[0]
	}
	op := cloneStage(ops[0])
	c := carriedOf(op)
	if c == nil || c.prev == nil { // equal keys: none of them carries any
		return op
	}
	prevs := make([]compute.Tensor, len(ops))
	for j, o := range ops {
		oc := carriedOf(o)
		prevs[j], oc.prev = oc.prev, nil
	}
	c.prev = join(be, prevs)
	return op
}

// unstack hands each stream its row of the columns the stacked stage op
// carries on, and its counters' advance.
func unstack(be compute.Backend, op streamOp, ops []streamOp) {
	if len(ops) == 1 {
		return
	}
	if c := carriedOf(op); c != nil && c.prev != nil {
		for j, o := range ops {
			carriedOf(o).prev = be.Slice(c.prev, 0, j, j+1)
		}
		be.Free(c.prev)
	}
	if t, ok := op.(*convTState); ok {
		t0 := ops[0].(*convTState) // untouched: op ran on its copy
		din, dout := t.in-t0.in, t.out-t0.out
		for _, o := range ops {
			o := o.(*convTState)
			o.in, o.out, o.skip = o.in+din, o.out+dout, t.skip
		}
	}
}

// cloneStage is a copy of a stage sharing its weights and, until one of
// them replaces it, its carried columns' handle.
func cloneStage(op streamOp) streamOp {
	switch s := op.(type) {
	case *convState:
		c := *s
		return &c
	case *convTState:
		c := *s
		return &c
	case *resState:
		c := *s
		return &c
	}
	return op // stateless
}
