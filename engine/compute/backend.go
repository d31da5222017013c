// Package compute defines the Backend interface: the tensors and the coarse
// op vocabulary that Zonos, its sampler, the DAC codec and the speaker model
// are written against. Models never look behind it; engine/compute/cpu implements it
// in pure Go (the reference) and gpu implements it with CUDA kernels.
//
// Conventions shared by every op:
//   - tensors are dense, row-major and contiguous; shapes are []int;
//   - activations and recurrent state are float32; weights may be BF16, F16
//     or F32, and arithmetic always accumulates in (at least) float32;
//   - ops allocate their result unless they are documented to update an
//     argument in place (caches and recurrent state);
//   - a malformed call (shape mismatch) is a programming error and panics with
//     a message naming the op; models validate user-facing input before
//     reaching the backend, so no panic crosses a package boundary.
//
// The op groups live in separate interfaces (core here, sequence models in
// sequence.go, audio convolutions in audio.go) so each stage's needs stay
// visible; Backend embeds them all.
package compute

import (
	"fmt"
	"math"
)

// DType is the element type of a tensor.
type DType uint8

const (
	F32 DType = iota
	BF16
	F16
	I32
)

func (d DType) String() string {
	switch d {
	case F32:
		return "F32"
	case BF16:
		return "BF16"
	case F16:
		return "F16"
	case I32:
		return "I32"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	switch d {
	case BF16, F16:
		return 2
	default:
		return 4
	}
}

// Tensor is a backend-owned array. Only the backend that made it may use it.
type Tensor interface {
	Shape() []int
	DType() DType
}

// NumElements is the product of a shape's dimensions.
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Backend is everything a model needs from a device.
type Backend interface {
	Core
	SequenceOps
	AudioOps
}

// Core holds memory management and the elementwise/normalisation ops.
type Core interface {
	// Name is the backend's short name ("cpu", "cuda").
	Name() string
	// Device describes the hardware in words, for meters and logs.
	Device() string
	// Close releases everything the backend owns.
	Close() error

	// Upload copies raw little-endian host data (a weight from a checkpoint)
	// to the device, keeping its dtype (BF16, F16, F32 or I32).
	Upload(dt DType, shape []int, raw []byte) (Tensor, error)
	// FromF32 and FromI32 copy host values to a new device tensor.
	FromF32(data []float32, shape ...int) Tensor
	FromI32(data []int32, shape ...int) Tensor
	// Zeros is a new float32 tensor of zeros.
	Zeros(shape ...int) Tensor
	// ReadF32 copies a tensor of any float dtype to the host as float32.
	ReadF32(t Tensor) []float32
	// ReadI32 copies an I32 tensor to the host.
	ReadI32(t Tensor) []int32
	// Free releases a tensor early; using it afterwards is an error.
	Free(t Tensor)

	// Reshape returns a tensor sharing t's storage with a new shape of the
	// same element count.
	Reshape(t Tensor, shape ...int) Tensor
	// Slice copies the range [start, end) of axis.
	Slice(t Tensor, axis, start, end int) Tensor
	// Concat joins tensors along axis; other dimensions must agree.
	Concat(axis int, ts ...Tensor) Tensor
	// CopyInto writes src into dst along axis starting at offset (in place).
	CopyInto(dst Tensor, axis, offset int, src Tensor)
	// Window joins a streamed stage's input along the last axis of F32
	// [B, C, ·] tensors: prev (or, where prev is nil, lead zero columns),
	// then x (nil: none), then trail zero columns. With keep > 0 it also
	// returns a copy of the joined window's last keep columns (at most its
	// length), the columns the stage carries to its next push; tail is nil
	// otherwise. It is Concat, Zeros and Slice in one pass, one kernel on
	// a GPU where they were three to five (the DAC streamer runs it at
	// every stage of every push). prev and x are not freed.
	Window(prev Tensor, lead int, x Tensor, trail, keep int) (w, tail Tensor)

	// Linear is y = x·wᵀ + b over the last axis: x [..., K], w [N, K], b [N]
	// or nil → [..., N].
	Linear(x, w, b Tensor) Tensor
	// Embedding gathers rows of table [V, D] for I32 ids [...] → [..., D].
	Embedding(table, ids Tensor) Tensor
	// Add is the elementwise sum of two tensors of the same shape.
	Add(a, b Tensor) Tensor
	// Scale multiplies every element by s.
	Scale(x Tensor, s float32) Tensor
	// CosSin maps x [..., n] to [cos x | sin x] of shape [..., 2n]
	// (Fourier features).
	CosSin(x Tensor) Tensor
	// LayerNorm normalises the last axis: (x−μ)/√(σ²+eps)·w + b.
	LayerNorm(x, w, b Tensor, eps float32) Tensor
	// AddLayerNorm is the fused pre-norm of mamba_ssm blocks: sum = x +
	// residual (residual may be nil: sum = x), out = LayerNorm(sum).
	AddLayerNorm(x, residual, w, b Tensor, eps float32) (out, sum Tensor)
	// SwiGLU splits the last axis in halves [y | gate] and returns
	// y·silu(gate) (the gated MLP of Zonos and mamba_ssm).
	SwiGLU(x Tensor) Tensor
}

// BF16ToFloat32 widens a bfloat16 bit pattern (its top 16 bits are a
// float32's).
func BF16ToFloat32(u uint16) float32 { return math.Float32frombits(uint32(u) << 16) }

// F16ToFloat32 widens an IEEE 754 half-precision value, subnormals and
// specials included.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) & 1
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign << 31)
	case exp == 0: // subnormal
		e := int32(-14)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign<<31 | uint32(e+127)<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign<<31 | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign<<31 | (exp-15+127)<<23 | mant<<13)
}

// AxisGeometry views a row-major shape as [outer, shape[axis], inner].
func AxisGeometry(shape []int, axis int) (outer, dim, inner int) {
	outer, inner = 1, 1
	for i, d := range shape {
		switch {
		case i < axis:
			outer *= d
		case i > axis:
			inner *= d
		}
	}
	return outer, shape[axis], inner
}
