//go:build cuda

package gpu

import (
	"fmt"
	"slices"

	"zonostream/engine/compute"
)

var _ compute.SpeakerBackend = (*Backend)(nil)

// Conv2d is the speaker model's convolution (BatchNorm folded in) with
// optional fused ReLU, as an implicit GEMM over fp32 weights.
func (b *Backend) Conv2d(x, w, bias compute.Tensor, c compute.Conv2dSpec) compute.Tensor {
	xt, wt := f32Of(x, "Conv2d"), cast(w)
	if len(xt.shape) != 4 || len(wt.shape) != 4 || wt.shape[1] != xt.shape[1] || c.Padding < 0 || c.Stride < 0 || wt.dt == compute.I32 {
		panic(fmt.Sprintf("gpu.Conv2d: x %v w %v %v spec %+v", xt.shape, wt.shape, wt.dt, c))
	}
	B, Cin, H, W := xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3]
	Cout, KH, KW := wt.shape[0], wt.shape[2], wt.shape[3]
	s := max(c.Stride, 1)
	if H+2*c.Padding < KH || W+2*c.Padding < KW {
		panic(fmt.Sprintf("gpu.Conv2d: input %v too small for kernel %v", xt.shape, wt.shape))
	}
	Ho, Wo := (H+2*c.Padding-KH)/s+1, (W+2*c.Padding-KW)/s+1
	bt := checkBias(bias, Cout, "Conv2d")
	relu := 0
	if c.ReLU {
		relu = 1
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, Cout, Ho, Wo)
		if out.n() == 0 || Cin == 0 {
			if out.n() > 0 { // no input channels: bias only
				panic("gpu.Conv2d: no input channels")
			}
			return
		}
		bp := nullPtr
		if bt != nil {
			bp = b.asF32(bt).ptr()
		}
		b.launch(b.k["conv2d_gemm"], [3]int{(Ho*Wo + 63) / 64, (Cout + 63) / 64, B}, block256,
			xt.ptr(), b.asF32(wt).ptr(), bp, out.ptr(), Cin, H, W, Cout, KH, KW, Ho, Wo, s, c.Padding, relu)
	})
	return out
}

// SimAMAddReLU is the tail of a SimAM block, one thread block per plane.
func (b *Backend) SimAMAddReLU(x, residual compute.Tensor, lambda float32) compute.Tensor {
	xt, rt := f32Of(x, "SimAMAddReLU"), f32Of(residual, "SimAMAddReLU")
	if len(xt.shape) != 4 || !slices.Equal(xt.shape, rt.shape) {
		panic(fmt.Sprintf("gpu.SimAMAddReLU: x %v residual %v", xt.shape, rt.shape))
	}
	planes, hw := xt.shape[0]*xt.shape[1], xt.shape[2]*xt.shape[3]
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, xt.shape...)
		if planes > 0 && hw > 0 {
			b.launch(b.k["simam_add_relu"], [3]int{planes, 1, 1}, block256, xt.ptr(), rt.ptr(), out.ptr(), hw, lambda)
		}
	})
	return out
}

// AttentiveStatsPool pools x [B, C, T] under softmax(logits) over T into
// [B, 2C] = [μ | σ], one thread block per (b, c).
func (b *Backend) AttentiveStatsPool(x, logits compute.Tensor, eps float32) compute.Tensor {
	xt, lt := f32Of(x, "AttentiveStatsPool"), f32Of(logits, "AttentiveStatsPool")
	if len(xt.shape) != 3 || !slices.Equal(xt.shape, lt.shape) || xt.shape[2] == 0 {
		panic(fmt.Sprintf("gpu.AttentiveStatsPool: x %v logits %v", xt.shape, lt.shape))
	}
	B, C, T := xt.shape[0], xt.shape[1], xt.shape[2]
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, 2*C)
		if B*C > 0 {
			b.launch(b.k["attentive_stats_pool"], [3]int{B * C, 1, 1}, block256, xt.ptr(), lt.ptr(), out.ptr(), C, T, eps)
		}
	})
	return out
}
