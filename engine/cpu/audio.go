package cpu

import (
	"fmt"
	"math"

	"zonostream/engine/compute"
)

func (b *Backend) Conv1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	c = c.Normalized()
	xs := f32Of(x, "Conv1d")
	xt, wt := cast(x).shape, cast(w)
	B, Cin, T := xt[0], xt[1], xt[2]
	Cout, Cg, K := wt.shape[0], wt.shape[1], wt.shape[2]
	if Cg*c.Groups != Cin || Cout%c.Groups != 0 {
		panic(fmt.Sprintf("cpu.Conv1d: x %v w %v groups %d", xt, wt.shape, c.Groups))
	}
	Tout := (T+2*c.Padding-c.Dilation*(K-1)-1)/c.Stride + 1
	if Tout <= 0 {
		panic(fmt.Sprintf("cpu.Conv1d: input %v too short for kernel %d", xt, K))
	}
	ws := wt.floats()
	var bs []float32
	if bias != nil {
		bs = cast(bias).floats()
	}
	out := newF32(B, Cout, Tout)
	opg := Cout / c.Groups
	b.parallelFor(B*Cout, func(lo, hi int) {
		for idx := lo; idx < hi; idx++ {
			bi, co := idx/Cout, idx%Cout
			g := co / opg
			o := out.f32[idx*Tout : (idx+1)*Tout]
			if bs != nil {
				for i := range o {
					o[i] = bs[co]
				}
			}
			for ci := 0; ci < Cg; ci++ {
				in := xs[(bi*Cin+g*Cg+ci)*T : (bi*Cin+g*Cg+ci+1)*T]
				wk := ws[(co*Cg+ci)*K : (co*Cg+ci+1)*K]
				for k, wv := range wk {
					off := k*c.Dilation - c.Padding
					for t := range o {
						p := t*c.Stride + off
						if p >= 0 && p < T {
							o[t] += wv * in[p]
						}
					}
				}
			}
		}
	})
	return out
}

func (b *Backend) ConvTranspose1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	c = c.Normalized()
	xs := f32Of(x, "ConvTranspose1d")
	xt, wt := cast(x).shape, cast(w)
	B, Cin, T := xt[0], xt[1], xt[2]
	if wt.shape[0] != Cin || c.Groups != 1 {
		panic(fmt.Sprintf("cpu.ConvTranspose1d: x %v w %v", xt, wt.shape))
	}
	Cout, K := wt.shape[1], wt.shape[2]
	Tout := (T-1)*c.Stride - 2*c.Padding + c.Dilation*(K-1) + 1 + c.OutPadding
	ws := wt.floats()
	var bs []float32
	if bias != nil {
		bs = cast(bias).floats()
	}
	out := newF32(B, Cout, Tout)
	b.parallelFor(B*Cout, func(lo, hi int) {
		for idx := lo; idx < hi; idx++ {
			bi, co := idx/Cout, idx%Cout
			o := out.f32[idx*Tout : (idx+1)*Tout]
			if bs != nil {
				for i := range o {
					o[i] = bs[co]
				}
			}
			for ci := 0; ci < Cin; ci++ {
				in := xs[(bi*Cin+ci)*T : (bi*Cin+ci+1)*T]
				wk := ws[(ci*Cout+co)*K : (ci*Cout+co+1)*K]
				for t, xv := range in {
					base := t*c.Stride - c.Padding
					for k, wv := range wk {
						p := base + k*c.Dilation
						if p >= 0 && p < Tout {
							o[p] += xv * wv
						}
					}
				}
			}
		}
	})
	return out
}

func (b *Backend) Snake(x, alpha compute.Tensor) compute.Tensor {
	xs := f32Of(x, "Snake")
	xt := cast(x).shape
	al := cast(alpha).floats()
	B, C, T := xt[0], xt[1], xt[2]
	if len(al) != C {
		panic(fmt.Sprintf("cpu.Snake: alpha of %d for %v", len(al), xt))
	}
	out := newF32(xt...)
	b.parallelFor(B*C, func(lo, hi int) {
		for idx := lo; idx < hi; idx++ {
			a := al[idx%C]
			inv := 1 / (a + 1e-9)
			for t := idx * T; t < (idx+1)*T; t++ {
				s := float32(math.Sin(float64(a * xs[t])))
				out.f32[t] = xs[t] + inv*s*s
			}
		}
	})
	return out
}

func (b *Backend) Tanh(x compute.Tensor) compute.Tensor {
	xs := f32Of(x, "Tanh")
	out := newF32(cast(x).shape...)
	for i, v := range xs {
		out.f32[i] = float32(math.Tanh(float64(v)))
	}
	return out
}
