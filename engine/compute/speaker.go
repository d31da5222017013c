package compute

// SpeakerOps are the ops of the speaker-embedding model (ResNet293 with
// SimAM blocks and attentive statistics pooling, Zyphra's
// speaker_cloning.py). Feature maps are [B, C, H, W] as in PyTorch (H the
// 80 mel bins, W time). BatchNorm is folded into the convolutions at load
// time, so a "conv + BN (+ ReLU)" of the reference is one Conv2d here.
//
// The ops are a separate interface, not part of Backend, so a backend can
// grow them independently; engine/speaker asks for a SpeakerBackend.
type SpeakerOps interface {
	// Conv2d: x [B, Cin, H, W], w [Cout, Cin, KH, KW], b [Cout] or nil →
	// [B, Cout, Ho, Wo] with Ho = (H + 2·Padding − KH)/Stride + 1 (same for
	// W); the same stride and zero padding apply to both axes; with ReLU
	// set the result is max(0, ·). Accumulates in (at least) float32.
	Conv2d(x, w, b Tensor, c Conv2dSpec) Tensor

	// SimAMAddReLU is the tail of a SimAM basic block:
	// relu(x·sigmoid(d/(4·(v+lambda)) + 0.5) + residual), where, per
	// (batch, channel) plane of x [B, C, H, W], d = (x − mean)² and
	// v = Σd / (H·W − 1). residual has x's shape.
	SimAMAddReLU(x, residual Tensor, lambda float32) Tensor

	// AttentiveStatsPool pools x [B, C, T] with attention logits [B, C, T]:
	// w = softmax over T of logits, μ = Σ x·w, σ = sqrt(max(Σ x²·w − μ², eps)),
	// and returns [B, 2C] = [μ | σ].
	AttentiveStatsPool(x, logits Tensor, eps float32) Tensor
}

// Conv2dSpec holds a 2-D convolution's hyper-parameters (Stride 0 means 1).
type Conv2dSpec struct {
	Stride, Padding int
	ReLU            bool // apply max(0, ·) to the result (fused)
}

// SpeakerBackend is a Backend that also implements the speaker model's ops.
type SpeakerBackend interface {
	Backend
	SpeakerOps
}
