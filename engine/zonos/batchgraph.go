package zonos

import (
	"fmt"

	"zonostream/engine/compute"
)

// batchGraph is a Batch's decode step recorded as one device graph
// (compute.GraphOps): embedding of the fed columns, the backbone, the
// heads, and guidance and sampling with every slot's own params
// (compute.RowSamplerOps). What changes between steps lives in one I32
// input tensor written before each replay:
//
//	[0, 9n)                 the fed columns, codebook-major [9, n]
//	[9n, 10n)               each slot's position
//	[10n, 10n+16n)          each slot's RowSamplerOps params
//	[26n, 26n+9n·w)         the repetition windows [9n, w], −1 where a
//	                        slot's window is shorter or it has none
//
// One is recorded per tier (the rows it steps). Nothing is baked in but
// the window width w, the widest any slot needs: a tier's graph is
// recorded again only when a slot needs a wider one.
type batchGraph struct {
	w   int
	g   compute.Graph
	in  compute.Tensor
	tok compute.Tensor // I32 [9n]
	buf []int32
}

func batchPos(n int) int    { return NumCodebooks * n }
func batchParams(n int) int { return (NumCodebooks + 1) * n }
func batchHist(n int) int   { return batchParams(n) + compute.RowParamWords*n }

// stepGraph returns the batch's recorded step for the windows histories
// need, recording it (again) when there is none or its window is too
// narrow; nil when the backend has no graphs, a slot's window is unbounded
// (Penalty on with window 0: the whole, growing history) or recording
// failed.
func (b *Batch) stepGraph(histories [][][]int32) *batchGraph {
	if _, ok := b.m.b.(compute.GraphOps); !ok || b.eager {
		return nil
	}
	w := 0
	for i, u := range b.order {
		s := b.slots[u]
		if s.spec.Penalty == 1 {
			continue
		}
		if s.spec.Window == 0 {
			return nil
		}
		w = max(w, s.spec.Window)
		for _, row := range histories[i] {
			w = max(w, len(row))
		}
	}
	if g := b.graphs[b.tier]; g != nil && g.w >= w {
		return g
	}
	if g := b.graphs[b.tier]; g != nil {
		g.destroy(b.m.b)
		delete(b.graphs, b.tier)
	}
	g, err := b.record(w)
	if err != nil {
		// The graph is only a faster way to run the same step: go on op by
		// op (a failing device fails those ops too, with their own errors).
		b.eager = true
		return nil
	}
	b.graphs[b.tier] = g
	return g
}

// RecordSteps records the step of every tier for repetition windows of
// width window, while the batch is empty, so that no utterance's step
// pays for a recording (a first step of a tier is a recording: tens of
// milliseconds on a GPU). It does nothing on a backend without graphs.
func (b *Batch) RecordSteps(window int) error {
	if _, ok := b.m.b.(compute.GraphOps); !ok || b.ops == nil || b.eager {
		return nil
	}
	if len(b.order) > 0 {
		return fmt.Errorf("batch: steps are recorded while it is empty")
	}
	defer func(t int) { b.tier = t }(b.tier)
	for t := 1; ; t = min(2*t, b.n) {
		b.tier = t
		if g := b.graphs[t]; g == nil || g.w < window {
			if g != nil {
				g.destroy(b.m.b)
			}
			g, err := b.record(window)
			if err != nil {
				return err
			}
			b.graphs[t] = g
		}
		if t == b.n || b.viewer == nil {
			return nil
		}
	}
}

// record captures the current tier's step with windows of width w.
func (b *Batch) record(w int) (*batchGraph, error) {
	be, n, st := b.m.b, b.tier, b.st()
	g := &batchGraph{w: w, buf: make([]int32, batchHist(n)+NumCodebooks*n*w)}
	g.in = be.FromI32(g.buf, len(g.buf))
	var err error
	g.g, err = be.(compute.GraphOps).Capture(func() {
		ids := be.Slice(g.in, 0, 0, NumCodebooks*n)
		pos := be.Slice(g.in, 0, batchPos(n), batchPos(n)+n)
		params := be.Reshape(be.Slice(g.in, 0, batchParams(n), batchHist(n)), n, compute.RowParamWords)
		var hist compute.Tensor
		if w > 0 {
			hist = be.Reshape(be.Slice(g.in, 0, batchHist(n), len(g.buf)), NumCodebooks*n, w)
		}
		heads := b.m.backbone(st, b.m.embedColumn(ids), compute.Positions{Dev: pos}, nil)
		g.tok = b.rows.SampleRows(b.rows.GuideRows(heads, params, EOS, true), hist, params)
	})
	if err != nil {
		be.Free(g.in)
		return nil, fmt.Errorf("recording the batch's decode step: %w", err)
	}
	return g, nil
}

// replay writes the step's input (the batch's params already in b.params)
// and runs it, returning the 9n tokens.
func (g *batchGraph) replay(b *Batch, cols [][NumCodebooks]int32, histories [][][]int32, pos []int) ([]int32, error) {
	n := b.tier
	copy(g.buf, columnIDs(cols))
	for u, p := range pos {
		g.buf[batchPos(n)+u] = int32(p)
	}
	copy(g.buf[batchParams(n):], b.params)
	if g.w > 0 {
		at := batchHist(n)
		for u := 0; u < n; u++ {
			for k := 0; k < NumCodebooks; k++ {
				var src []int32
				if histories[u] != nil && k < len(histories[u]) {
					src = histories[u][k]
				}
				copy(g.buf[at:at+g.w], padRow(src, g.w))
				at += g.w
			}
		}
	}
	var err error
	b.m.onDevice(func() {
		b.m.b.(compute.GraphOps).WriteI32(g.in, g.buf)
		err = g.g.Launch()
	})
	if err != nil {
		return nil, err
	}
	// The read waits outside the hand-off, leaving the owner thread free
	// to launch other lanes' work while the step runs.
	return b.m.b.ReadI32(g.tok), nil
}

func (g *batchGraph) destroy(be compute.Backend) {
	g.g.Destroy()
	be.Free(g.in)
}
