package compute

// SequenceOps are the mixers of the Zonos backbones: attention with a KV
// cache and the Mamba2 selective state-space layer. Both take a batch of
// sequences [B, T, ·] that continue from the state they are given, so the
// same op serves prefill (T > 1) and single-step decode (T = 1).
type SequenceOps interface {
	// Attention runs causal multi-head attention with grouped KV heads,
	// reading q, k and v out of the fused in_proj output qkv [B, T,
	// (H + 2·Hkv)·Dh] (q [H·Dh] first, then k [Hkv·Dh], then v [Hkv·Dh]).
	// Rotary embedding is applied to q and k at each row's new positions
	// (at), the rotated k and v are written to the caches [B, maxT, Hkv,
	// Dh] at those positions (in place), and each query attends to cache
	// positions [0, its own position]. Returns [B, T, H·Dh]. Scale 1/√Dh.
	// Query head i uses KV head i / (H/Hkv).
	Attention(qkv, kCache, vCache Tensor, at Positions, a AttentionSpec) Tensor

	// Mamba2 runs the Mamba2 mixer between its two projections: given the
	// in_proj output zxbcdt [B, T, 2·Di + 2·G·N + H] it applies the causal
	// depthwise conv (continuing from convState [B, Di+2·G·N, Kc], which
	// holds the last Kc pre-activation xBC columns), SiLU, the selective scan
	// (continuing from ssmState [B, H, P, N]), the D skip and the gated
	// RMSNorm rmsnorm(y·silu(z))·w. Both states are updated in place.
	// Returns [B, T, Di].
	Mamba2(zxbcdt Tensor, w Mamba2Weights, convState, ssmState Tensor, s Mamba2Spec) Tensor
}

// Positions says where the new positions of an Attention call stand in
// the cache, in one of three forms:
//
//   - Start (Dev and Rows nil): every row at Start … Start+T−1, the form of
//     a prefill and of a lockstep decode step.
//   - Rows: one new position per row (T = 1), row b at Rows[b mod
//     len(Rows)] — one position per utterance when the rows are the
//     utterances' CFG pairs (b and b + n); len(Rows) must divide B. A
//     batch whose utterances stand at different positions (prompts of
//     different lengths, an utterance that joined later) steps this way.
//   - Dev: as Rows, but the positions are an I32 [P] device tensor read at
//     run time (P = 1: one position for every row), which a decode step
//     recorded as a graph needs (GraphOps): the position changes from
//     replay to replay. Only backends with GraphOps take it, and the
//     range is the caller's to check.
//
// Start is ignored with Dev or Rows; Rows is ignored with Dev.
type Positions struct {
	Start int
	Dev   Tensor
	Rows  []int
}

// Rotary conventions differ between Zonos' two backbones (golden README,
// "Rotary — two conventions").
type Rotary uint8

const (
	// RotaryHalves pairs element i with i + Dr/2 over the first Dr dims
	// (GPT-NeoX / flash-attn non-interleaved): mamba_ssm's MHA in the hybrid.
	RotaryHalves Rotary = iota
	// RotaryInterleaved pairs elements (2i, 2i+1) over the whole head:
	// Zonos' pure-torch transformer backbone.
	RotaryInterleaved
)

// AttentionSpec describes one attention layer's geometry.
type AttentionSpec struct {
	Heads, KVHeads, HeadDim int
	RotaryDim               int // dims rotated (≤ HeadDim; 0: no rotary embedding)
	Rotary                  Rotary
	RotaryBase              float64 // 10000 in Zonos
}

// Mamba2Spec describes one Mamba2 layer's geometry.
type Mamba2Spec struct {
	DInner  int // expand · d_model
	Heads   int // DInner / HeadDim
	HeadDim int
	DState  int
	Groups  int
	DConv   int
	Eps     float32 // gated RMSNorm epsilon
}

// Mamba2Weights are the per-layer tensors the mixer needs between its
// projections (checkpoint names in brackets).
type Mamba2Weights struct {
	ConvWeight Tensor // [Di+2GN, 1, Kc] (conv1d.weight)
	ConvBias   Tensor // [Di+2GN]        (conv1d.bias)
	DtBias     Tensor // [H]             (dt_bias)
	ALog       Tensor // [H]             (A_log)
	D          Tensor // [H]             (D)
	NormWeight Tensor // [Di]            (norm.weight)
}

// Mamba2Block is an optional SequenceOps extension: a Mamba2 layer's whole
// mixer, Linear(Mamba2(Linear(x, inProj), …), outProj) with no biases,
// where the backend can run it in fewer passes than the three ops (the
// GPU's decode step folds the conv into in_proj's output and the gated
// norm into out_proj's input: one kernel less per layer). Same arithmetic
// as the three ops up to the order of the norm's sum of squares; both
// states are updated as Mamba2 updates them. ok is false, and nothing is
// done, where the backend has no such path for these shapes: the caller
// then runs the three ops.
type Mamba2Block interface {
	Mamba2Block(x, inProj, outProj Tensor, w Mamba2Weights, convState, ssmState Tensor, s Mamba2Spec) (y Tensor, ok bool)
}

// Mamba2Run is an optional SequenceOps extension for a decode step (one
// position, one utterance): a run of consecutive residual blocks whose
// mixer is Mamba2 and that have no MLP, each
//
//	x, residual = AddLayerNorm(hidden, residual, Norm…)
//	hidden = Mamba2Block(x, …)
//
// in one pass, where the backend can stream the run's weights without
// stopping between its layers. residual is nil before the backbone's first
// block. It returns the last block's (hidden, residual), and updates every
// block's states as Mamba2 does; the arithmetic is the blocks' up to the
// order of sums. ok is false, and nothing is done, where the backend has no
// such path for these shapes: the caller then runs the blocks one by one.
type Mamba2Run interface {
	Mamba2Run(hidden, residual Tensor, blocks []Mamba2RunBlock, eps float32) (h, r Tensor, ok bool)
}

// Mamba2RunBlock is one block of a Mamba2Run: its norm, its mixer's
// projections and weights, and its states.
type Mamba2RunBlock struct {
	NormW, NormB        Tensor // LayerNorm [d] (NormB may be nil)
	InProj, OutProj     Tensor
	W                   Mamba2Weights
	ConvState, SSMState Tensor
	Spec                Mamba2Spec
}
