package cpu

import (
	"fmt"
	"math"
	"slices"

	"zonostream/engine/compute"
)

// rotaryTable returns cos and sin for positions [pos, pos+T) and Dr/2
// frequencies, computed in float32 as flash-attn and Zonos do
// (inv_freq = 1/base^(2i/Dr), angle = t·inv_freq).
func rotaryTable(pos, T, dr int, base float64) (cos, sin []float32) {
	half := dr / 2
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(dr)
		inv[i] = 1 / float32(math.Pow(base, float64(e)))
	}
	cos = make([]float32, T*half)
	sin = make([]float32, T*half)
	for t := 0; t < T; t++ {
		for i, f := range inv {
			a := float32(pos+t) * f
			cos[t*half+i] = float32(math.Cos(float64(a)))
			sin[t*half+i] = float32(math.Sin(float64(a)))
		}
	}
	return cos, sin
}

// rotate applies rotary embedding in place to one head vector.
func rotate(v, cos, sin []float32, dr int, style compute.Rotary) {
	half := dr / 2
	for i := 0; i < half; i++ {
		var a, b *float32
		if style == compute.RotaryInterleaved {
			a, b = &v[2*i], &v[2*i+1]
		} else {
			a, b = &v[i], &v[i+half]
		}
		x1, x2 := *a, *b
		*a = x1*cos[i] - x2*sin[i]
		*b = x2*cos[i] + x1*sin[i]
	}
}

// Attention is compute.SequenceOps.Attention for host positions: Start
// for every row, or Rows, row b at Rows[b mod len(Rows)]. Device positions
// (Positions.Dev) belong to recorded step graphs, which this backend does
// not have.
func (b *Backend) Attention(qkv, kCache, vCache compute.Tensor, at compute.Positions, a compute.AttentionSpec) compute.Tensor {
	qt, cs := cast(qkv).shape, cast(kCache).shape
	if len(qt) != 3 || len(cs) != 4 {
		panic(fmt.Sprintf("cpu.Attention: qkv %v cache %v spec %+v (want [B, T, (H+2Hkv)·Dh] and [B, maxT, Hkv, Dh])", qt, cs, a))
	}
	B, T := qt[0], qt[1]
	pos := []int{at.Start}
	switch {
	case at.Dev != nil:
		panic("cpu.Attention: device positions (Positions.Dev) need a backend with compute.GraphOps; pass Start or Rows")
	case at.Rows != nil:
		if T != 1 {
			panic(fmt.Sprintf("cpu.Attention: %d new positions per row with a position per row (Positions.Rows), want 1", T))
		}
		pos = at.Rows
	}
	qkvs := f32Of(qkv, "Attention")
	kc, vc := f32Of(kCache, "Attention"), f32Of(vCache, "Attention")
	H, Hk, Dh := a.Heads, a.KVHeads, a.HeadDim
	w := (H + 2*Hk) * Dh // floats per (b, t) row of qkv
	kOff, vOff := H*Dh, (H+Hk)*Dh
	maxT := cs[1]
	if Hk <= 0 || H%Hk != 0 || qt[2] != w || cs[0] != B || cs[2] != Hk || cs[3] != Dh || !slices.Equal(cast(vCache).shape, cs) {
		panic(fmt.Sprintf("cpu.Attention: qkv %v cache %v spec %+v (want [B, T, %d] and [B, maxT, Hkv, Dh])", qt, cs, a, w))
	}
	if len(pos) == 0 || B%len(pos) != 0 {
		panic(fmt.Sprintf("cpu.Attention: %d positions for %d rows", len(pos), B))
	}
	for _, p := range pos {
		if p < 0 || p+T > maxT {
			panic(fmt.Sprintf("cpu.Attention: positions [%d,%d) outside cache of %d", p, p+T, maxT))
		}
	}
	dr := a.RotaryDim
	// RotaryDim 0 means no rotary embedding (mamba_ssm MHA with
	// rotary_emb_dim = 0); the transformer backbone passes HeadDim.
	half := dr / 2
	cos, sin := make([][]float32, len(pos)), make([][]float32, len(pos))
	for i, p := range pos {
		cos[i], sin[i] = rotaryTable(p, T, dr, a.RotaryBase)
	}
	// Rotate k and write k, v into the caches.
	for bi := 0; bi < B; bi++ {
		pi := bi % len(pos)
		for t := 0; t < T; t++ {
			for h := 0; h < Hk; h++ {
				src := (bi*T+t)*w + h*Dh
				dst := ((bi*maxT+pos[pi]+t)*Hk + h) * Dh
				copy(kc[dst:dst+Dh], qkvs[kOff+src:][:Dh])
				copy(vc[dst:dst+Dh], qkvs[vOff+src:][:Dh])
				rotate(kc[dst:dst+Dh], cos[pi][t*half:], sin[pi][t*half:], dr, a.Rotary)
			}
		}
	}
	out := newF32(B, T, H*Dh)
	scale := float32(1 / math.Sqrt(float64(Dh)))
	group := H / Hk
	b.parallelFor(B*T*H, func(lo, hi int) {
		qv := make([]float32, Dh)
		scores := make([]float32, maxT)
		for idx := lo; idx < hi; idx++ {
			bi, t, h := idx/(T*H), (idx/H)%T, idx%H
			pi := bi % len(pos)
			kh := h / group
			copy(qv, qkvs[(bi*T+t)*w+h*Dh:][:Dh])
			rotate(qv, cos[pi][t*half:], sin[pi][t*half:], dr, a.Rotary)
			n := pos[pi] + t + 1
			mx := float32(math.Inf(-1))
			for j := 0; j < n; j++ {
				s := dot(qv, kc[((bi*maxT+j)*Hk+kh)*Dh:][:Dh]) * scale
				scores[j] = s
				mx = max(mx, s)
			}
			var den float64
			for j := 0; j < n; j++ {
				e := math.Exp(float64(scores[j] - mx))
				scores[j] = float32(e)
				den += e
			}
			o := out.f32[((bi*T+t)*H+h)*Dh:][:Dh]
			for j := 0; j < n; j++ {
				p := scores[j] / float32(den)
				vr := vc[((bi*maxT+j)*Hk+kh)*Dh:][:Dh]
				for d := range o {
					o[d] += p * vr[d]
				}
			}
		}
	})
	return out
}

func softplus(x float32) float32 {
	if x > 20 { // torch's threshold
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

func (b *Backend) Mamba2(zxbcdt compute.Tensor, w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec) compute.Tensor {
	in := f32Of(zxbcdt, "Mamba2")
	shp := cast(zxbcdt).shape
	B, T, E := shp[0], shp[1], shp[2]
	Di, H, P, N, G, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.Groups, s.DConv
	C := Di + 2*G*N
	if E != 2*Di+2*G*N+H || H*P != Di {
		panic(fmt.Sprintf("cpu.Mamba2: input %v for spec %+v", shp, s))
	}
	cst, sst := f32Of(convState, "Mamba2"), f32Of(ssmState, "Mamba2")
	if len(cst) != B*C*Kc || len(sst) != B*H*P*N {
		panic(fmt.Sprintf("cpu.Mamba2: state sizes %v %v for spec %+v", cast(convState).shape, cast(ssmState).shape, s))
	}
	cw := cast(w.ConvWeight).floats() // [C, 1, Kc]
	cb := cast(w.ConvBias).floats()
	dtb := cast(w.DtBias).floats()
	alog := cast(w.ALog).floats()
	dd := cast(w.D).floats()
	nw := cast(w.NormWeight).floats()
	A := make([]float32, H)
	for h := range A {
		A[h] = -float32(math.Exp(float64(alog[h])))
	}
	out := newF32(B, T, Di)
	hpg := H / G
	b.parallelFor(B, func(lo, hi int) {
		xbc := make([]float32, C)
		y := make([]float32, Di)
		for bi := lo; bi < hi; bi++ {
			cs := cst[bi*C*Kc : (bi+1)*C*Kc]
			ss := sst[bi*H*P*N : (bi+1)*H*P*N]
			for t := 0; t < T; t++ {
				row := in[(bi*T+t)*E : (bi*T+t+1)*E]
				z, raw, dt := row[:Di], row[Di:Di+C], row[Di+C:]
				// Causal depthwise conv over the rolling pre-activation state.
				for c := 0; c < C; c++ {
					st := cs[c*Kc : (c+1)*Kc]
					copy(st, st[1:])
					st[Kc-1] = raw[c]
					acc := cb[c]
					for j := 0; j < Kc; j++ {
						acc += st[j] * cw[c*Kc+j]
					}
					xbc[c] = silu(acc)
				}
				x, Bm, Cm := xbc[:Di], xbc[Di:Di+G*N], xbc[Di+G*N:]
				// Selective scan, one step per head.
				for h := 0; h < H; h++ {
					g := h / hpg
					bg, cg := Bm[g*N:(g+1)*N], Cm[g*N:(g+1)*N]
					delta := softplus(dt[h] + dtb[h])
					decay := float32(math.Exp(float64(delta * A[h])))
					for p := 0; p < P; p++ {
						xv := x[h*P+p]
						st := ss[(h*P+p)*N : (h*P+p+1)*N]
						dx := delta * xv
						var acc float32
						for n := 0; n < N; n++ {
							v := st[n]*decay + dx*bg[n]
							st[n] = v
							acc += v * cg[n]
						}
						y[h*P+p] = acc + dd[h]*xv
					}
				}
				// Gated RMSNorm (norm_before_gate=False): rmsnorm(y·silu(z))·w.
				// One normalisation group per SSM group (group_size = Di/G).
				o := out.f32[(bi*T+t)*Di : (bi*T+t+1)*Di]
				gs := Di / G
				for g0 := 0; g0 < Di; g0 += gs {
					var ms float64
					for i := g0; i < g0+gs; i++ {
						y[i] *= silu(z[i])
						ms += float64(y[i]) * float64(y[i])
					}
					r := float32(1 / math.Sqrt(ms/float64(gs)+float64(s.Eps)))
					for i := g0; i < g0+gs; i++ {
						o[i] = y[i] * r * nw[i]
					}
				}
			}
		}
	})
	return out
}
