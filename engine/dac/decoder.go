package dac

import (
	"fmt"
	"math"

	"zonostream/engine/compute"
)

// Decoder is DacDecoder: conv k7 (hidden → decoder_hidden), one block per
// upsampling ratio, Snake, conv k7 (→ 1 channel), tanh. It maps a latent
// [1, hidden, T] to audio [1, 1, T·hop].
type Decoder struct {
	conv1  conv
	blocks []decoderBlock
	snake1 snake
	conv2  conv
}

// decoderBlock is DacDecoderBlock: Snake, ConvTranspose1d (kernel 2s, stride
// s, padding ⌈s/2⌉, channels halved), three residual units (dilation 1, 3, 9).
type decoderBlock struct {
	snake1 snake
	convT  conv
	res    [3]resUnit
}

func (b *binder) bindDecoder(c Config) Decoder {
	d := Decoder{conv1: b.bindConv("decoder.conv1", c.HiddenSize, c.DecoderHiddenSize, 7, compute.Conv1dSpec{Padding: 3})}
	for i, s := range c.UpsamplingRatios {
		in, out := c.DecoderHiddenSize>>i, c.DecoderHiddenSize>>(i+1)
		p := fmt.Sprintf("decoder.block.%d", i)
		blk := decoderBlock{
			snake1: b.bindSnake(p+".snake1", in),
			convT:  b.bindConvT(p+".conv_t1", in, out, 2*s, compute.Conv1dSpec{Stride: s, Padding: (s + 1) / 2}),
		}
		for j, dil := range resDilations {
			blk.res[j] = b.bindResUnit(fmt.Sprintf("%s.res_unit%d", p, j+1), out, dil)
		}
		d.blocks = append(d.blocks, blk)
	}
	last := c.DecoderHiddenSize >> len(c.UpsamplingRatios)
	d.snake1 = b.bindSnake("decoder.snake1", last)
	d.conv2 = b.bindConv("decoder.conv2", last, 1, 7, compute.Conv1dSpec{Padding: 3})
	return d
}

// forward decodes latent [1, hidden, T] to audio [1, 1, T·hop]. The latent
// is not freed.
func (d *Decoder) forward(be compute.Backend, latent compute.Tensor) compute.Tensor {
	x := d.conv1.forward(be, latent)
	for i := range d.blocks {
		blk := &d.blocks[i]
		h := blk.snake1.forward(be, x)
		be.Free(x)
		x = blk.convT.forward(be, h)
		be.Free(h)
		for j := range blk.res {
			y := blk.res[j].forward(be, x)
			be.Free(x)
			x = y
		}
	}
	h := d.snake1.forward(be, x)
	be.Free(x)
	x = d.conv2.forward(be, h)
	be.Free(h)
	y := be.Tanh(x)
	be.Free(x)
	return y
}

// FLOPsPerFrame is the multiply-adds ×2 the decoder spends per frame of
// codes (1.6 GFLOP for dac_44khz: 86 frames per second of audio), for the
// benchmarks' throughput figures.
func (c Config) FLOPsPerFrame() float64 {
	var macs float64
	macs += float64(c.HiddenSize) * float64(c.DecoderHiddenSize) * 7
	rate := 1.0 // positions per frame
	for i, s := range c.UpsamplingRatios {
		in, out := float64(c.DecoderHiddenSize>>i), float64(c.DecoderHiddenSize>>(i+1))
		macs += rate * in * out * float64(2*s)
		rate *= float64(s)
		macs += rate * 3 * (out*out*7 + out*out)
	}
	macs += rate * float64(c.DecoderHiddenSize>>len(c.UpsamplingRatios)) * 7
	return 2 * math.Round(macs)
}
