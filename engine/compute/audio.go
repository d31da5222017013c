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
