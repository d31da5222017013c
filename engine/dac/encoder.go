package dac

import (
	"fmt"

	"zonostream/engine/compute"
)

// Encoder is DacEncoder: conv k7 (1 → encoder_hidden), one block per
// downsampling ratio (channels doubled each time), Snake, conv k3 (→
// hidden_size). It maps audio [1, 1, N] to a latent [1, hidden, N/hop].
type Encoder struct {
	conv1  conv
	blocks []encoderBlock
	snake1 snake
	conv2  conv
}

// encoderBlock is DacEncoderBlock: three residual units (dilation 1, 3, 9)
// at dim/2 channels, Snake, Conv1d (kernel 2s, stride s, padding ⌈s/2⌉,
// dim/2 → dim).
type encoderBlock struct {
	res    [3]resUnit
	snake1 snake
	conv1  conv
}

func (b *binder) bindEncoder(c Config) Encoder {
	e := Encoder{conv1: b.bindConv("encoder.conv1", 1, c.EncoderHiddenSize, 7, compute.Conv1dSpec{Padding: 3})}
	for i, s := range c.DownsamplingRatios {
		dim := c.EncoderHiddenSize << (i + 1)
		p := fmt.Sprintf("encoder.block.%d", i)
		var blk encoderBlock
		for j, dil := range resDilations {
			blk.res[j] = b.bindResUnit(fmt.Sprintf("%s.res_unit%d", p, j+1), dim/2, dil)
		}
		blk.snake1 = b.bindSnake(p+".snake1", dim/2)
		blk.conv1 = b.bindConv(p+".conv1", dim/2, dim, 2*s, compute.Conv1dSpec{Stride: s, Padding: (s + 1) / 2})
		e.blocks = append(e.blocks, blk)
	}
	dModel := c.EncoderHiddenSize << len(c.DownsamplingRatios)
	e.snake1 = b.bindSnake("encoder.snake1", dModel)
	e.conv2 = b.bindConv("encoder.conv2", dModel, c.HiddenSize, 3, compute.Conv1dSpec{Padding: 1})
	return e
}

// forward maps audio [1, 1, N] (N a multiple of the hop) to [1, hidden,
// N/hop]. The input is not freed.
func (e *Encoder) forward(be compute.Backend, audio compute.Tensor) compute.Tensor {
	x := e.conv1.forward(be, audio)
	for i := range e.blocks {
		blk := &e.blocks[i]
		for j := range blk.res {
			y := blk.res[j].forward(be, x)
			be.Free(x)
			x = y
		}
		h := blk.snake1.forward(be, x)
		be.Free(x)
		x = blk.conv1.forward(be, h)
		be.Free(h)
	}
	h := e.snake1.forward(be, x)
	be.Free(x)
	x = e.conv2.forward(be, h)
	be.Free(h)
	return x
}
