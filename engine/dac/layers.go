package dac

import "zonostream/engine/compute"

// conv is a Conv1d or ConvTranspose1d with its folded weight and bias
// (checkpoint names prefix.weight / prefix.bias). Its time geometry (kernel,
// stride, padding, dilation) is also what the streamer's receptive-field
// derivation reads (field.go).
type conv struct {
	w, b       compute.Tensor
	k          int
	spec       compute.Conv1dSpec
	transposed bool
}

// bindConv reads a Conv1d: weight [cout, cin, k].
func (b *binder) bindConv(prefix string, cin, cout, k int, spec compute.Conv1dSpec) conv {
	w := b.convWeight(prefix, []int{cout, cin, k})
	bias := b.read(prefix+".bias", []int{cout})
	return conv{w: b.upload(w, cout, cin, k), b: b.upload(bias, cout), k: k, spec: spec.Normalized()}
}

// bindConvT reads a ConvTranspose1d: weight [cin, cout, k] (PyTorch layout).
func (b *binder) bindConvT(prefix string, cin, cout, k int, spec compute.Conv1dSpec) conv {
	w := b.convWeight(prefix, []int{cin, cout, k})
	bias := b.read(prefix+".bias", []int{cout})
	return conv{w: b.upload(w, cin, cout, k), b: b.upload(bias, cout), k: k, spec: spec.Normalized(), transposed: true}
}

func (c *conv) forward(be compute.Backend, x compute.Tensor) compute.Tensor {
	if c.transposed {
		return be.ConvTranspose1d(x, c.w, c.b, c.spec)
	}
	return be.Conv1d(x, c.w, c.b, c.spec)
}

// snake is Snake1d: x + sin²(αx)/(α + 1e-9), α per channel (stored
// prefix.alpha [1, C, 1]).
type snake struct{ alpha compute.Tensor }

func (b *binder) bindSnake(prefix string, c int) snake {
	return snake{alpha: b.upload(b.read(prefix+".alpha", []int{1, c, 1}), c)}
}

func (s *snake) forward(be compute.Backend, x compute.Tensor) compute.Tensor {
	return be.Snake(x, s.alpha)
}

// resUnit is DacResidualUnit: x + conv2(snake2(conv1(snake1(x)))) with conv1
// kernel 7, dilation d, padding 3d (length-preserving) and conv2 kernel 1.
// transformers centre-crops x when the branch is shorter; with these
// paddings it never is, so there is no crop.
type resUnit struct {
	snake1 snake
	conv1  conv
	snake2 snake
	conv2  conv
}

// resDilations are the dilations of the three residual units of every DAC
// block (modeling_dac.py: DacEncoderBlock / DacDecoderBlock).
var resDilations = [3]int{1, 3, 9}

func (b *binder) bindResUnit(prefix string, ch, dilation int) resUnit {
	return resUnit{
		snake1: b.bindSnake(prefix+".snake1", ch),
		conv1:  b.bindConv(prefix+".conv1", ch, ch, 7, compute.Conv1dSpec{Dilation: dilation, Padding: 3 * dilation}),
		snake2: b.bindSnake(prefix+".snake2", ch),
		conv2:  b.bindConv(prefix+".conv2", ch, ch, 1, compute.Conv1dSpec{}),
	}
}

func (r *resUnit) forward(be compute.Backend, x compute.Tensor) compute.Tensor {
	h := r.snake1.forward(be, x)
	out := r.branch(be, h, r.conv1.spec, x, 0)
	be.Free(h)
	return out
}

// branch returns res[:, :, off:off+T] + conv2(snake2(conv1(h))), conv1 taken
// with spec1 (the streamer's drops the padding its window carries); on a
// backend with compute.ConvEpilogues the Snake and the add are done by the
// convolutions as they store their outputs.
func (r *resUnit) branch(be compute.Backend, h compute.Tensor, spec1 compute.Conv1dSpec, res compute.Tensor, off int) compute.Tensor {
	if ce, ok := be.(compute.ConvEpilogues); ok {
		g := ce.Conv1dSnake(h, r.conv1.w, r.conv1.b, spec1, r.snake2.alpha)
		out := ce.Conv1dResidual(g, r.conv2.w, r.conv2.b, r.conv2.spec, res, off)
		be.Free(g)
		return out
	}
	y := be.Conv1d(h, r.conv1.w, r.conv1.b, spec1)
	g := r.snake2.forward(be, y)
	be.Free(y)
	y = be.Conv1d(g, r.conv2.w, r.conv2.b, r.conv2.spec)
	be.Free(g)
	var out compute.Tensor
	if off == 0 && cols(res) == cols(y) {
		out = be.Add(res, y)
	} else {
		rs := be.Slice(res, 2, off, off+cols(y))
		out = be.Add(rs, y)
		be.Free(rs)
	}
	be.Free(y)
	return out
}
