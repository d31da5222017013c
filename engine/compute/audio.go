package compute

// AudioOps are the convolutional ops of the DAC codec (and later the speaker
// model). Signals are [B, C, T] (batch, channels, time), as in PyTorch.
type AudioOps interface {
	// Conv1d: x [B, Cin, T], w [Cout, Cin/groups, K], b [Cout] or nil.
	Conv1d(x, w, b Tensor, c Conv1dSpec) Tensor
	// ConvTranspose1d: x [B, Cin, T], w [Cin, Cout, K] (PyTorch layout), b
	// [Cout] or nil; output length (T−1)·stride − 2·padding + K + outPadding.
	ConvTranspose1d(x, w, b Tensor, c Conv1dSpec) Tensor
	// Snake is x + sin²(αx)/(α + 1e-9) with α [C] per channel of x [B, C, T].
	Snake(x, alpha Tensor) Tensor
	// Tanh is the elementwise hyperbolic tangent.
	Tanh(x Tensor) Tensor
}

// ConvEpilogues is an optional AudioOps extension: a Conv1d that does the
// pointwise work following it in the DAC's residual units as it stores
// each output, saving a pass over the output and, on the GPU, launches.
// Each equals the unfused ops to the backend's rounding (bit for bit on
// the GPU, which uses the same arithmetic for both).
type ConvEpilogues interface {
	// Conv1dSnake is Snake(Conv1d(x, w, b, c), alpha).
	Conv1dSnake(x, w, b Tensor, c Conv1dSpec, alpha Tensor) Tensor
	// Conv1dResidual is Add(res[:, :, off:off+T], y) with y = Conv1d(x,
	// w, b, c) of length T; res has y's batch and channels.
	Conv1dResidual(x, w, b Tensor, c Conv1dSpec, res Tensor, off int) Tensor
}

// SnakeWindows is an optional Core extension for the DAC streamer's
// residual units, which run Snake over each window they join: WindowSnake
// is Window that also returns h = Snake(w, alpha) (alpha [C]) from the
// same pass, equal to the backend's Snake bit for bit.
type SnakeWindows interface {
	WindowSnake(prev Tensor, lead int, x Tensor, trail, keep int, alpha Tensor) (w, h, tail Tensor)
}

// Conv1dSpec holds a convolution's hyper-parameters (zero values mean
// stride 1, no padding, dilation 1, one group).
type Conv1dSpec struct {
	Stride, Padding, Dilation, Groups int
	OutPadding                        int // ConvTranspose1d only
}

// Normalized fills defaults for zero fields.
func (c Conv1dSpec) Normalized() Conv1dSpec {
	if c.Stride == 0 {
		c.Stride = 1
	}
	if c.Dilation == 0 {
		c.Dilation = 1
	}
	if c.Groups == 0 {
		c.Groups = 1
	}
	return c
}
