package dac

import (
	"fmt"

	"zonostream/engine/compute"
)

// Stateful streaming. Decoding each emission as a window (left context,
// new frames, held-back tail) recomputes the context every time: a
// 16-frame emission decoded about 36 frames. Instead every layer of the
// decoder keeps the few input columns its next outputs still need, and each
// emission pushes only the new frames' latent through the stack:
//
//   - a "same"-padded convolution (kernel k, dilation d, padding p with
//     d·(k−1) = 2p) keeps its last 2p inputs; it starts from p zero columns
//     (the left padding) and ends by taking p more (the right padding);
//   - a transposed convolution with kernel 2s keeps its last input (a zero
//     column before the stream), drops the first p outputs (its padding)
//     and ends by taking one zero column, cut to the one-shot length;
//   - a residual unit keeps its last 2p inputs like its first convolution,
//     and runs Snake and that convolution over the joined window, whose
//     centre is also the residual (resState);
//   - Snake and tanh act on each column alone: the final tanh is a stage
//     of its own; each Snake before a convolution is taken with that
//     convolution's window (activation), from the raw columns it carries.
//
// Every output is computed by the same products, in the same order, as in
// one-shot decoding: the zero columns stand where one-shot decoding reads
// its zero padding, and a product with zero leaves the sum as it was. So
// the emitted samples equal Model.Decode's (bit for bit on the CPU
// backend; the GPU's convolutions reduce each output in a fixed order
// wherever it lies, so there too). The stack's latency is the derived
// right field (Field.RightSamples), so emissions come out exactly when the
// window streamer emitted them.

// streamOp is one stage of the stateful decoder. push takes ownership of x
// ([1, C, m], m ≥ 1) and returns the outputs that became final (nil: none
// yet). finish ends the input: it takes the last columns x (nil: none)
// and returns every output still to come, those of x and of the stage's
// right padding, from one window (a stage that pushed x and then its
// padding ran its kernels twice; the outputs are the same columns by the
// same products either way).
type streamOp interface {
	push(be compute.Backend, x compute.Tensor) compute.Tensor
	finish(be compute.Backend, x compute.Tensor) compute.Tensor
	free(be compute.Backend)
	// viewed returns a copy of the stage whose carried columns are a new
	// handle (be.Reshape) on the same storage (pushgraph.go), and that
	// handle (nil when the stage carries nothing).
	viewed(be compute.Backend) (streamOp, compute.Tensor)
}

// cols is a tensor's length along time (0 for nil).
func cols(t compute.Tensor) int {
	if t == nil {
		return 0
	}
	return t.Shape()[2]
}

// cut returns columns [lo, hi) of t (nil when empty) and frees t.
func cut(be compute.Backend, t compute.Tensor, lo, hi int) compute.Tensor {
	if lo == 0 && hi == cols(t) {
		return t
	}
	var out compute.Tensor
	if hi > lo {
		out = be.Slice(t, 2, lo, hi)
	}
	be.Free(t)
	return out
}

// carried holds the last input columns a stage still needs.
type carried struct {
	prev compute.Tensor // nil before the first push
}

// window joins the carried columns (before the first push, lead zero
// columns: the padding before the stream), x (taken; nil: none) and trail
// zero columns (the padding after it) in one pass (compute.Core.Window).
// When the window is longer than keep it returns it and carries its last
// keep columns; otherwise it carries the whole window and returns nil
// (no output is final yet).
func (c *carried) window(be compute.Backend, x compute.Tensor, lead, trail, keep int) compute.Tensor {
	w, _ := c.windowSnake(be, x, lead, trail, keep, nil)
	return w
}

// windowSnake is window that, given alpha, also returns Snake of the
// window (from the same pass where the backend has compute.SnakeWindows).
func (c *carried) windowSnake(be compute.Backend, x compute.Tensor, lead, trail, keep int, alpha compute.Tensor) (w, h compute.Tensor) {
	n := cols(x) + trail
	if c.prev != nil {
		n += cols(c.prev)
	} else {
		n += lead
	}
	short := n <= keep
	if short {
		keep = 0
	}
	var tail compute.Tensor
	sw, fused := be.(compute.SnakeWindows)
	if fused && alpha != nil && !short {
		w, h, tail = sw.WindowSnake(c.prev, lead, x, trail, keep, alpha)
	} else {
		w, tail = be.Window(c.prev, lead, x, trail, keep)
	}
	if c.prev != nil {
		be.Free(c.prev)
	}
	if x != nil {
		be.Free(x)
	}
	if short {
		c.prev = w
		return nil, nil
	}
	c.prev = tail
	if alpha != nil && h == nil {
		h = be.Snake(w, alpha)
	}
	return w, h
}

// ended reports whether finish has nothing to do: no last columns and no
// push before them, so no carried columns to pad.
func (c *carried) ended(x compute.Tensor) bool { return x == nil && c.prev == nil }

// view replaces c.prev by a new handle on its storage and returns it.
func (c *carried) view(be compute.Backend) compute.Tensor {
	if c.prev != nil {
		c.prev = be.Reshape(c.prev, c.prev.Shape()...)
	}
	return c.prev
}

func (c *carried) free(be compute.Backend) {
	if c.prev != nil {
		be.Free(c.prev)
		c.prev = nil
	}
}

// pointOp is a stage that acts on each column alone (Snake, tanh).
type pointOp func(be compute.Backend, x compute.Tensor) compute.Tensor

func (f pointOp) push(be compute.Backend, x compute.Tensor) compute.Tensor {
	y := f(be, x)
	be.Free(x)
	return y
}
func (f pointOp) finish(be compute.Backend, x compute.Tensor) compute.Tensor {
	if x == nil {
		return nil
	}
	return f.push(be, x)
}
func (pointOp) free(compute.Backend) {}
func (f pointOp) viewed(compute.Backend) (streamOp, compute.Tensor) {
	return f, nil
}

// activation is the Snake a stage applies to its input before its
// convolution (nil: none). A stage with one carries its raw input and
// takes the Snake of each window as it joins it (carried.windowSnake: one
// pass on a backend with compute.SnakeWindows, where a Snake stage of its
// own was a kernel and a pass more); Snake acts on each column alone, so
// the convolution reads the same values either way.
type activation struct{ act *snake }

// alpha is the Snake's parameter, nil without one.
func (a activation) alpha() compute.Tensor {
	if a.act == nil {
		return nil
	}
	return a.act.alpha
}

// input is the window a convolution reads: h (the Snake of w) when there
// is one, else w.
func input(w, h compute.Tensor) compute.Tensor {
	if h != nil {
		return h
	}
	return w
}

// freeWindow frees a window and its Snake (nil: none).
func freeWindow(be compute.Backend, w, h compute.Tensor) {
	be.Free(w)
	if h != nil {
		be.Free(h)
	}
}

// convState streams a stride-1 convolution with symmetric padding, of its
// input's Snake when it has an activation (the decoder's last Snake).
type convState struct {
	c    *conv
	spec compute.Conv1dSpec // c.spec without padding
	pad  int
	span int // d·(k−1): how far an output reads past its first input
	activation
	carried // the last span inputs
}

func newConvState(c *conv, act *snake) (*convState, error) {
	sp := c.spec
	if c.transposed || sp.Stride != 1 || sp.Groups != 1 || 2*sp.Padding != sp.Dilation*(c.k-1) {
		return nil, fmt.Errorf("dac streamer: convolution kernel %d %+v is not length-preserving; cannot stream it", c.k, sp)
	}
	s := &convState{c: c, spec: sp, pad: sp.Padding, span: sp.Dilation * (c.k - 1), activation: activation{act}}
	s.spec.Padding = 0
	return s, nil
}

func (s *convState) push(be compute.Backend, x compute.Tensor) compute.Tensor {
	if s.span == 0 {
		in := x
		if s.act != nil {
			in = s.act.forward(be, x)
			be.Free(x)
		}
		y := be.Conv1d(in, s.c.w, s.c.b, s.spec)
		be.Free(in)
		return y
	}
	return s.conv(be, x, 0)
}

// conv joins the window — the carried columns, x and trail zero columns —
// and runs the convolution over it (nil: no output final yet).
func (s *convState) conv(be compute.Backend, x compute.Tensor, trail int) compute.Tensor {
	w, h := s.windowSnake(be, x, s.pad, trail, s.span, s.alpha())
	if w == nil {
		return nil
	}
	y := be.Conv1d(input(w, h), s.c.w, s.c.b, s.spec)
	freeWindow(be, w, h)
	return y
}

func (s *convState) viewed(be compute.Backend) (streamOp, compute.Tensor) {
	c := *s
	return &c, c.view(be)
}

// finish takes the last columns and p zero columns after them (the right
// padding).
func (s *convState) finish(be compute.Backend, x compute.Tensor) compute.Tensor {
	if s.span == 0 {
		if x == nil {
			return nil
		}
		return s.push(be, x)
	}
	if s.ended(x) {
		return nil
	}
	return s.conv(be, x, s.pad)
}

// convTState streams a transposed convolution with kernel 2·stride (each
// output reads two consecutive inputs), of its input's Snake when it has
// an activation (a decoder block's first Snake).
type convTState struct {
	c      *conv
	spec   compute.Conv1dSpec // stride, no padding
	stride int
	pad    int
	activation
	carried     // the last input (a zero column before the stream)
	in, out int // inputs taken, outputs returned
	skip    int // leading outputs still to drop (the padding)
}

func newConvTState(c *conv, act *snake) (*convTState, error) {
	sp := c.spec
	if !c.transposed || sp.Dilation != 1 || sp.Groups != 1 || sp.OutPadding != 0 || c.k != 2*sp.Stride || sp.Padding > sp.Stride {
		return nil, fmt.Errorf("dac streamer: transposed convolution kernel %d %+v is not kernel 2·stride; cannot stream it", c.k, sp)
	}
	s := &convTState{c: c, spec: compute.Conv1dSpec{Stride: sp.Stride}, stride: sp.Stride, pad: sp.Padding, skip: sp.Padding, activation: activation{act}}
	s.spec = s.spec.Normalized()
	return s, nil
}

// total is the one-shot output length for n inputs.
func (s *convTState) total(n int) int { return (n+1)*s.stride - 2*s.pad }

func (s *convTState) push(be compute.Backend, x compute.Tensor) compute.Tensor {
	s.in += cols(x)
	return s.run(be, x, false)
}

// run transposes a window — the previous input, x and, when final, a zero
// column — and returns its outputs that are final (when final, up to the
// one-shot length).
func (s *convTState) run(be compute.Backend, x compute.Tensor, final bool) compute.Tensor {
	trail := 0
	if final {
		trail = 1
	}
	w, h := s.windowSnake(be, x, 1, trail, 1, s.alpha())
	n := cols(w)
	raw := be.ConvTranspose1d(input(w, h), s.c.w, s.c.b, s.spec)
	freeWindow(be, w, h)
	// Raw output r reads inputs ⌊r/s⌋ − 1 and ⌊r/s⌋ of the window: the
	// ones in [s, n·s) read two real (or padding) columns.
	lo, hi := s.stride, n*s.stride
	drop := min(s.skip, hi-lo)
	s.skip -= drop
	lo += drop
	if final {
		hi = min(hi, lo+s.total(s.in)-s.out)
	}
	y := cut(be, raw, lo, hi)
	s.out += cols(y)
	return y
}

func (s *convTState) viewed(be compute.Backend) (streamOp, compute.Tensor) {
	c := *s
	return &c, c.view(be)
}

// finish takes the last inputs and one zero column after them, and cuts
// the outputs to the one-shot length.
func (s *convTState) finish(be compute.Backend, x compute.Tensor) compute.Tensor {
	if s.ended(x) {
		return nil
	}
	s.in += cols(x)
	return s.run(be, x, true)
}

// resState streams a residual unit, x + conv2(snake2(conv1(snake1(x)))).
// It keeps the unit's last span = 2p inputs (before Snake; p zero columns
// before the stream, the left padding) rather than conv1 keeping its last
// Snake outputs beside a queue of the inputs the residual still needs:
// each push joins the carried columns with the new ones once, runs Snake
// over that window and conv1 without padding (its outputs are the window's
// centres), and takes the residual from the centre of the same window.
// Snake maps a zero column to zeros exactly, so conv1 reads the zeros
// one-shot decoding pads with, and every output is the arithmetic of
// one-shot decoding. The window and its Snake come from one pass where the
// backend has compute.SnakeWindows: on the GPU one kernel per push instead
// of a join, a cut and a Snake, which keeps a steady emission at 71
// kernels (H200, 2026-11-30, docs/performance.md).
type resState struct {
	r       *resUnit
	spec1   compute.Conv1dSpec // conv1's, without padding
	pad     int                // conv1's padding p
	span    int                // 2p: how far a conv1 output reads past its first input
	carried                    // the last span inputs of the unit
}

func newResState(r *resUnit) (*resState, error) {
	c1, err := newConvState(&r.conv1, nil)
	if err != nil {
		return nil, err
	}
	if k := r.conv2.k; k != 1 || r.conv2.transposed || r.conv2.spec.Padding != 0 {
		return nil, fmt.Errorf("dac streamer: residual unit's second convolution has kernel %d %+v, not 1; cannot stream it", k, r.conv2.spec)
	}
	return &resState{r: r, spec1: c1.spec, pad: c1.pad, span: c1.span}, nil
}

func (s *resState) push(be compute.Backend, x compute.Tensor) compute.Tensor {
	return s.unit(be, x, 0)
}

// unit joins the unit's window — the carried columns, x and trail zero
// columns — with its Snake, and runs the unit over it (nil: no output
// final yet).
func (s *resState) unit(be compute.Backend, x compute.Tensor, trail int) compute.Tensor {
	w, h := s.windowSnake(be, x, s.pad, trail, s.span, s.r.snake1.alpha)
	if w == nil {
		return nil
	}
	// conv1's outputs are for inputs [pad, n − pad) of w, the residual's
	// columns.
	out := s.r.branch(be, h, s.spec1, w, s.pad)
	freeWindow(be, w, h)
	return out
}

func (s *resState) viewed(be compute.Backend) (streamOp, compute.Tensor) {
	c := *s
	return &c, c.view(be)
}

// finish takes the last columns and p zero columns after them: conv1's
// right padding.
func (s *resState) finish(be compute.Backend, x compute.Tensor) compute.Tensor {
	if s.ended(x) {
		return nil
	}
	return s.unit(be, x, s.pad)
}

// decoderState is the Decoder as a chain of streaming stages, latent
// columns in, final audio samples out.
type decoderState struct {
	ops []streamOp
	// From a replayed first push (pushgraph.go): the graph whose storage
	// the stages' carried columns are views of, and those views. The
	// graph is released for another stream once no stage holds one.
	graph *pushGraph
	views []compute.Tensor
}

func (d *Decoder) newState() (*decoderState, error) {
	st := &decoderState{}
	add := func(c *conv, act *snake) error {
		s, err := newConvState(c, act)
		if err == nil {
			st.ops = append(st.ops, s)
		}
		return err
	}
	if err := add(&d.conv1, nil); err != nil {
		return nil, err
	}
	// Each Snake before a convolution is that convolution's stage's
	// activation (see activation).
	for i := range d.blocks {
		blk := &d.blocks[i]
		ct, err := newConvTState(&blk.convT, &blk.snake1)
		if err != nil {
			return nil, err
		}
		st.ops = append(st.ops, ct)
		for j := range blk.res {
			r := &blk.res[j]
			rs, err := newResState(r)
			if err != nil {
				return nil, err
			}
			st.ops = append(st.ops, rs)
		}
	}
	if err := add(&d.conv2, &d.snake1); err != nil {
		return nil, err
	}
	st.ops = append(st.ops, pointOp(func(be compute.Backend, x compute.Tensor) compute.Tensor { return be.Tanh(x) }))
	return st, nil
}

// push runs new latent columns [1, hidden, m] through the chain (taking
// ownership) and returns the audio samples that became final, [1, 1, n],
// or nil.
func (st *decoderState) push(be compute.Backend, x compute.Tensor) compute.Tensor {
	for _, op := range st.ops {
		if x == nil {
			return nil
		}
		x = op.push(be, x)
	}
	return x
}

// finish ends the stream: it takes the last latent columns x (nil: none)
// and each stage, in order, finishes with the previous stages' last
// outputs (streamOp.finish). It returns the samples still to come.
func (st *decoderState) finish(be compute.Backend, x compute.Tensor) compute.Tensor {
	for _, op := range st.ops {
		x = op.finish(be, x)
	}
	return x
}

func (st *decoderState) free(be compute.Backend) {
	for _, op := range st.ops {
		op.free(be)
	}
	st.releaseGraph()
}
