//go:build cuda

package gpu

import (
	"fmt"

	"zonostream/engine/compute"
)

// conv launches a convolution (owner goroutine): conv_direct for a
// convolution with at most 8 output channels (a 64-row tile would be
// mostly empty), the tiled tensor-core GEMM (tcGemm: conv_tcq) for the
// others and for a transposed one of dilation 1 whose kernel is a
// multiple of its stride (one GEMM per output phase), and conv_gemm's
// fp32 tiles for the rest (groups, other transposed geometries).
func (b *Backend) conv(x, w, bias, out *tensor, c compute.Conv1dSpec, K, Tout int, transposed bool, epi convEpilogue) {
	B, Cin, T := x.shape[0], x.shape[1], x.shape[2]
	Cout := out.shape[1]
	if out.n() == 0 {
		return
	}
	bp := nullPtr
	if bias != nil {
		bp = b.asF32(bias).ptr()
	}
	tr := 0
	if transposed {
		tr = 1
	}
	if c.Groups == 1 {
		wf := b.asF32(w)
		cv := tcShape{batch: B, cin: Cin, t: T, cout: Cout, kw: K, tout: Tout, stride: c.Stride, pad: c.Padding, dil: c.Dilation}
		if !transposed {
			cv.epi = epi
		}
		switch {
		case !transposed && Cout <= 8:
			b.launch(b.k["conv_direct"], [3]int{(Tout + 31) / 32, Cout, B}, [3]int{256, 1, 1}, x.ptr(), wf.ptr(), bp, out.ptr(),
				B, Cin, T, Cout, K, Tout, c.Stride, c.Padding, c.Dilation)
			return
		case !transposed:
			b.tcGemm(tcConvMode, x, wf, bp, out, Cout, Tout, Cin*K, cv)
			return
		case c.Dilation == 1 && K%c.Stride == 0:
			b.tcGemm(tcConvT, x, wf, bp, out, Cout, (Tout+c.Stride-1)/c.Stride+1, Cin*(K/c.Stride), cv)
			return
		}
	}
	opg := Cout / c.Groups
	b.launch(b.k["conv_gemm"], [3]int{(Tout + 63) / 64, (opg + 63) / 64, B * c.Groups}, block256,
		x.ptr(), b.asF32(w).ptr(), bp, out.ptr(), Cin, T, Cout, K, Tout, c.Stride, c.Padding, c.Dilation, c.Groups, tr)
}

func checkBias(bias compute.Tensor, n int, op string) *tensor {
	if bias == nil {
		return nil
	}
	bt := cast(bias)
	if bt.n() != n {
		panic(fmt.Sprintf("gpu.%s: bias of %d for %d outputs", op, bt.n(), n))
	}
	return bt
}

func (b *Backend) Conv1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	return b.conv1d(x, w, bias, c, nil, nil, 0)
}

var _ compute.ConvEpilogues = (*Backend)(nil)

// Conv1dSnake is compute.ConvEpilogues: Snake applied as conv_tcq (or
// tc_reduce_rows after split-K) stores each output, the snake kernel's
// arithmetic, so one launch and one pass over the output fewer.
func (b *Backend) Conv1dSnake(x, w, bias compute.Tensor, c compute.Conv1dSpec, alpha compute.Tensor) compute.Tensor {
	if !fusesEpilogue(c.Normalized(), cast(w).shape[0]) {
		return b.Snake(b.Conv1d(x, w, bias, c), alpha)
	}
	return b.conv1d(x, w, bias, c, alpha, nil, 0)
}

// Conv1dResidual is compute.ConvEpilogues: the residual added as each
// output is stored (res + y, as Add computes it), so the residual's slice
// and the add are not kernels of their own.
func (b *Backend) Conv1dResidual(x, w, bias compute.Tensor, c compute.Conv1dSpec, res compute.Tensor, off int) compute.Tensor {
	if !fusesEpilogue(c.Normalized(), cast(w).shape[0]) {
		y := b.Conv1d(x, w, bias, c)
		r := b.Slice(res, 2, off, off+cast(y).shape[2])
		out := b.Add(r, y)
		b.Free(r)
		b.Free(y)
		return out
	}
	return b.conv1d(x, w, bias, c, nil, res, off)
}

// conv1d is Conv1d with an optional epilogue (alpha: Snake; res: the
// residual from column off), which the caller has checked fusesEpilogue.
func (b *Backend) conv1d(x, w, bias compute.Tensor, c compute.Conv1dSpec, alpha, res compute.Tensor, off int) compute.Tensor {
	c = c.Normalized()
	xt, wt := f32Of(x, "Conv1d"), cast(w)
	if len(xt.shape) != 3 || len(wt.shape) != 3 || c.Stride < 1 || c.Dilation < 1 || c.Padding < 0 || c.Groups < 1 {
		panic(fmt.Sprintf("gpu.Conv1d: x %v w %v spec %+v", xt.shape, wt.shape, c))
	}
	B, Cin, T := xt.shape[0], xt.shape[1], xt.shape[2]
	Cout, Cg, K := wt.shape[0], wt.shape[1], wt.shape[2]
	if Cg*c.Groups != Cin || Cout%c.Groups != 0 {
		panic(fmt.Sprintf("gpu.Conv1d: x %v w %v groups %d", xt.shape, wt.shape, c.Groups))
	}
	Tout := (T+2*c.Padding-c.Dilation*(K-1)-1)/c.Stride + 1
	if Tout <= 0 {
		panic(fmt.Sprintf("gpu.Conv1d: input %v too short for kernel %d", xt.shape, K))
	}
	bt := checkBias(bias, Cout, "Conv1d")
	var epi convEpilogue
	if alpha != nil {
		if epi.alpha = cast(alpha); epi.alpha.n() != Cout {
			panic(fmt.Sprintf("gpu.Conv1dSnake: alpha of %d for %d channels", epi.alpha.n(), Cout))
		}
	}
	if res != nil {
		epi.res, epi.resOff = f32Of(res, "Conv1dResidual"), off
		if rs := epi.res.shape; len(rs) != 3 || rs[0] != B || rs[1] != Cout || off < 0 || off+Tout > rs[2] {
			panic(fmt.Sprintf("gpu.Conv1dResidual: residual %v from column %d for output [%d %d %d]", rs, off, B, Cout, Tout))
		}
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, Cout, Tout)
		if epi.alpha != nil {
			epi.alpha = b.asF32(epi.alpha)
		}
		b.conv(xt, wt, bt, out, c, K, Tout, false, epi)
	})
	return out
}

func (b *Backend) ConvTranspose1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	c = c.Normalized()
	xt, wt := f32Of(x, "ConvTranspose1d"), cast(w)
	if len(xt.shape) != 3 || len(wt.shape) != 3 || wt.shape[0] != xt.shape[1] || c.Groups != 1 ||
		c.Stride < 1 || c.Dilation < 1 || c.Padding < 0 {
		panic(fmt.Sprintf("gpu.ConvTranspose1d: x %v w %v spec %+v", xt.shape, wt.shape, c))
	}
	B, T := xt.shape[0], xt.shape[2]
	Cout, K := wt.shape[1], wt.shape[2]
	Tout := (T-1)*c.Stride - 2*c.Padding + c.Dilation*(K-1) + 1 + c.OutPadding
	if Tout <= 0 {
		panic(fmt.Sprintf("gpu.ConvTranspose1d: x %v w %v gives %d outputs", xt.shape, wt.shape, Tout))
	}
	bt := checkBias(bias, Cout, "ConvTranspose1d")
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, Cout, Tout)
		b.conv(xt, wt, bt, out, c, K, Tout, true, convEpilogue{})
	})
	return out
}

func (b *Backend) Snake(x, alpha compute.Tensor) compute.Tensor {
	xt := f32Of(x, "Snake")
	if len(xt.shape) != 3 {
		panic(fmt.Sprintf("gpu.Snake: x %v", xt.shape))
	}
	at := cast(alpha)
	C, T := xt.shape[1], xt.shape[2]
	if at.n() != C {
		panic(fmt.Sprintf("gpu.Snake: alpha of %d for %v", at.n(), xt.shape))
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, xt.shape...)
		if n := out.n(); n > 0 {
			b.launch(b.k["snake"], grid1(n), block256, xt.ptr(), b.asF32(at).ptr(), out.ptr(), n, C, T)
		}
	})
	return out
}
