package dac

// The decoder is a stack of non-causal convolutions, so an output sample
// depends on a window of frames around it, and the output of a decode over
// frames [a, b) differs from one-shot decoding near a and b: the zero
// padding every layer applies at the window's edges stands in for
// activations one-shot decoding computes from real frames. This file derives
// both effects from the layers' kernels, strides, paddings and dilations:
// no number here is measured or copied (field_test.go measures them and
// compares). The Sonata study measured 10 frames of left context and a
// 5254-sample right tail for dac_44khz (docs/ZONOS.md).

// timeOp is one layer's effect on the time axis.
type timeOp interface {
	// reads is the inclusive range of input positions output o reads
	// (positions outside the input are zero padding).
	reads(o int) (lo, hi int)
	// exact maps the half-open range of input positions that hold correct
	// values to the range of output positions computed only from them.
	exact(lo, hi int) (int, int)
}

// convOp is a Conv1d: output o reads o·s − p + j·d for j in 0..k−1.
type convOp struct{ k, stride, pad, dil int }

func (c convOp) reads(o int) (int, int) {
	lo := o*c.stride - c.pad
	return lo, lo + (c.k-1)*c.dil
}

func (c convOp) exact(lo, hi int) (int, int) { return exactBySearch(c, lo, hi) }

// convTOp is a ConvTranspose1d: input t writes outputs t·s − p + j for j in
// 0..k−1, so output o reads t in [⌈(o+p−k+1)/s⌉, ⌊(o+p)/s⌋].
type convTOp struct{ k, stride, pad int }

func (c convTOp) reads(o int) (int, int) {
	return ceilDiv(o+c.pad-c.k+1, c.stride), floorDiv(o+c.pad, c.stride)
}

func (c convTOp) exact(lo, hi int) (int, int) { return exactBySearch(c, lo, hi) }

// residualOp is x + branch(x): an output position is correct when both its
// own input and the branch's output at that position are.
type residualOp struct{ branch []timeOp }

func (r residualOp) reads(o int) (int, int) {
	lo, hi := coneOf(r.branch, o, o)
	return min(lo, o), max(hi, o)
}

func (r residualOp) exact(lo, hi int) (int, int) {
	blo, bhi := lo, hi
	for _, op := range r.branch {
		blo, bhi = op.exact(blo, bhi)
	}
	return max(lo, blo), min(hi, bhi)
}

// exactBySearch finds the output range whose reads fall inside [lo, hi),
// for an op whose read range moves monotonically with the output position.
func exactBySearch(op timeOp, lo, hi int) (int, int) {
	if hi <= lo {
		return 0, 0
	}
	olo := outputBelow(op, lo)
	for {
		if l, _ := op.reads(olo); l >= lo {
			break
		}
		olo++
	}
	ohi := olo
	for {
		if _, h := op.reads(ohi); h > hi-1 {
			break
		}
		ohi++
	}
	if ohi <= olo {
		return olo, olo
	}
	return olo, ohi
}

// outputBelow returns an output position whose reads start before in, found
// by stepping down in powers of two.
func outputBelow(op timeOp, in int) int {
	o := in
	for step := 1; ; step *= 2 {
		if l, _ := op.reads(o); l < in {
			return o
		}
		o -= step
	}
}

// coneOf is the inclusive range of positions before ops that output
// positions [lo, hi] after them depend on.
func coneOf(ops []timeOp, lo, hi int) (int, int) {
	for i := len(ops) - 1; i >= 0; i-- {
		lo, _ = ops[i].reads(lo)
		_, hi = ops[i].reads(hi)
	}
	return lo, hi
}

// timeOps lists the decoder's layers as time-axis ops, latent frames in,
// audio samples out (Snake and tanh are pointwise and do not appear).
func (d *Decoder) timeOps() []timeOp {
	op := func(c *conv) timeOp {
		if c.transposed {
			return convTOp{k: c.k, stride: c.spec.Stride, pad: c.spec.Padding}
		}
		return convOp{k: c.k, stride: c.spec.Stride, pad: c.spec.Padding, dil: c.spec.Dilation}
	}
	ops := []timeOp{op(&d.conv1)}
	for i := range d.blocks {
		blk := &d.blocks[i]
		ops = append(ops, op(&blk.convT))
		for j := range blk.res {
			r := &blk.res[j]
			ops = append(ops, residualOp{branch: []timeOp{op(&r.conv1), op(&r.conv2)}})
		}
	}
	return append(ops, op(&d.conv2))
}

// Field is the decoder's receptive field in samples and frames.
type Field struct {
	Hop int // samples per frame
	// LeftSamples: a decode whose window starts at frame a > 0 gets samples
	// before a·hop + LeftSamples wrong (warm-up); LeftFrames =
	// ⌈LeftSamples/hop⌉ frames of left context make the first new sample
	// exact.
	LeftSamples, LeftFrames int
	// RightSamples: a decode whose window ends at frame b before the end of
	// the stream gets the last RightSamples samples before b·hop wrong (the
	// tail held back until more frames arrive); RightFrames = ⌈RightSamples
	// /hop⌉.
	RightSamples, RightFrames int
	// ReachBefore and ReachAfter: changing frame f changes at most samples
	// [f·hop − ReachBefore, (f+1)·hop + ReachAfter), from the layers' read
	// cones (what the receptive-field test measures).
	ReachBefore, ReachAfter int
}

// field derives the receptive field from the decoder's layers.
func (d *Decoder) field(hop int) Field {
	ops := d.timeOps()
	// A window far from both stream ends: frames [0, W) of something longer.
	const W = 128
	lo, hi := 0, W
	for _, op := range ops {
		lo, hi = op.exact(lo, hi)
	}
	f := Field{Hop: hop, LeftSamples: lo, RightSamples: W*hop - hi}
	f.LeftFrames = ceilDiv(f.LeftSamples, hop)
	f.RightFrames = ceilDiv(f.RightSamples, hop)
	// Samples whose cone contains frame c, for a frame far from the edges.
	const c = W / 2
	first, last := c*hop, (c+1)*hop-1
	for n := c * hop; ; n-- {
		if _, h := coneOf(ops, n, n); h < c {
			break
		}
		first = n
	}
	for n := (c + 1) * hop; ; n++ {
		if l, _ := coneOf(ops, n, n); l > c {
			break
		}
		last = n
	}
	f.ReachBefore = c*hop - first
	f.ReachAfter = last + 1 - (c+1)*hop
	return f
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }
