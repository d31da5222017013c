package cpu

import (
	"fmt"
	"math"
	"slices"

	"zonostream/engine/compute"
)

var _ compute.SpeakerBackend = (*Backend)(nil)

// conv2dTile is the number of output positions one worker unfolds at a
// time: the unfolded tile (tile × Cin·KH·KW floats, ≤ 0.9 MB for the real
// model's 512-channel 3×3 convs) stays in L2 while every group of four
// output channels sweeps it.
const conv2dTile = 48

// Conv2d computes the convolution as dot products between weight rows
// [Cin·KH·KW] and unfolded input patches laid out position-major, four
// output channels × two positions at a time with float32 accumulators
// (the speaker model's sums have ≤ 4608 terms; conformance checks the
// result). conv2dRef is the plain loop it is tested against.
func (b *Backend) Conv2d(x, w, bias compute.Tensor, c compute.Conv2dSpec) compute.Tensor {
	xs := f32Of(x, "Conv2d")
	xt, wt := cast(x).shape, cast(w)
	B, Cin, H, W, Cout, KH, KW, Ho, Wo := conv2dGeometry(xt, wt.shape, c)
	stride := max(c.Stride, 1)
	bs := biasOf(bias, Cout, "Conv2d")
	ws := wt.floats()
	K := Cin * KH * KW
	out := newF32(B, Cout, Ho, Wo)
	P := Ho * Wo
	tiles := (P + conv2dTile - 1) / conv2dTile
	for bi := 0; bi < B; bi++ {
		in := xs[bi*Cin*H*W : (bi+1)*Cin*H*W]
		o := out.f32[bi*Cout*P : (bi+1)*Cout*P]
		b.parallelFor(tiles, func(lo, hi int) {
			col := make([]float32, (conv2dTile+1)*K) // +1: odd tiles pair the last position with a zero row
			for tile := lo; tile < hi; tile++ {
				p0 := tile * conv2dTile
				n := min(conv2dTile, P-p0)
				clear(col[n*K : (n+1)*K])
				// unfold positions p0 … p0+n−1 into col[p][ci·KH·KW + kh·KW + kw]
				for j := 0; j < n; j++ {
					ho, wo := (p0+j)/Wo, (p0+j)%Wo
					row := col[j*K : (j+1)*K]
					idx := 0
					for ci := 0; ci < Cin; ci++ {
						plane := in[ci*H*W : (ci+1)*H*W]
						for kh := 0; kh < KH; kh++ {
							y := ho*stride + kh - c.Padding
							if y < 0 || y >= H {
								for kw := 0; kw < KW; kw++ {
									row[idx] = 0
									idx++
								}
								continue
							}
							line := plane[y*W : (y+1)*W]
							for kw := 0; kw < KW; kw++ {
								xx := wo*stride + kw - c.Padding
								if xx >= 0 && xx < W {
									row[idx] = line[xx]
								} else {
									row[idx] = 0
								}
								idx++
							}
						}
					}
				}
				for co0 := 0; co0 < Cout; co0 += 4 {
					m := min(4, Cout-co0)
					var wr [4][]float32
					for q := 0; q < 4; q++ {
						cq := co0 + min(q, m-1)
						wr[q] = ws[cq*K : (cq+1)*K]
					}
					for j := 0; j < n; j += 2 {
						acc := dot4x2f32(col[j*K:(j+1)*K], col[(j+1)*K:(j+2)*K], wr[0], wr[1], wr[2], wr[3])
						for q := 0; q < m; q++ {
							var bv float32
							if bs != nil {
								bv = bs[co0+q]
							}
							dst := o[(co0+q)*P:]
							v0 := acc[2*q] + bv
							if c.ReLU && v0 < 0 {
								v0 = 0
							}
							dst[p0+j] = v0
							if j+1 < n {
								v1 := acc[2*q+1] + bv
								if c.ReLU && v1 < 0 {
									v1 = 0
								}
								dst[p0+j+1] = v1
							}
						}
					}
				}
			}
		})
	}
	return out
}

// conv2dGeometry validates a Conv2d call and returns its sizes.
func conv2dGeometry(xt, wt []int, c compute.Conv2dSpec) (B, Cin, H, W, Cout, KH, KW, Ho, Wo int) {
	if len(xt) != 4 || len(wt) != 4 || wt[1] != xt[1] || c.Padding < 0 || c.Stride < 0 {
		panic(fmt.Sprintf("cpu.Conv2d: x %v w %v spec %+v", xt, wt, c))
	}
	B, Cin, H, W = xt[0], xt[1], xt[2], xt[3]
	Cout, KH, KW = wt[0], wt[2], wt[3]
	s := max(c.Stride, 1)
	Ho = (H+2*c.Padding-KH)/s + 1
	Wo = (W+2*c.Padding-KW)/s + 1
	if H+2*c.Padding < KH || W+2*c.Padding < KW || Ho <= 0 || Wo <= 0 {
		panic(fmt.Sprintf("cpu.Conv2d: input %v too small for kernel %v", xt, wt))
	}
	return
}

// dot4x2f32 returns the dot products of two vectors x0, x1 with four
// weight rows: [w0·x0, w0·x1, w1·x0, w1·x1, …], in float32, index order.
func dot4x2f32(x0, x1, w0, w1, w2, w3 []float32) (acc [8]float32) {
	n := len(x0)
	x1, w0, w1, w2, w3 = x1[:n], w0[:n], w1[:n], w2[:n], w3[:n]
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	for i := 0; i < n; i++ {
		u, v := x0[i], x1[i]
		w := w0[i]
		a0 += w * u
		a1 += w * v
		w = w1[i]
		a2 += w * u
		a3 += w * v
		w = w2[i]
		a4 += w * u
		a5 += w * v
		w = w3[i]
		a6 += w * u
		a7 += w * v
	}
	return [8]float32{a0, a1, a2, a3, a4, a5, a6, a7}
}

// conv2dRef is the plain loop (float64 accumulation, bias first).
func (b *Backend) conv2dRef(x, w, bias compute.Tensor, c compute.Conv2dSpec) compute.Tensor {
	xs := f32Of(x, "Conv2d")
	B, Cin, H, W, Cout, KH, KW, Ho, Wo := conv2dGeometry(cast(x).shape, cast(w).shape, c)
	s := max(c.Stride, 1)
	ws := cast(w).floats()
	bs := biasOf(bias, Cout, "Conv2d")
	out := newF32(B, Cout, Ho, Wo)
	for bi := 0; bi < B; bi++ {
		for co := 0; co < Cout; co++ {
			for ho := 0; ho < Ho; ho++ {
				for wo := 0; wo < Wo; wo++ {
					var acc float64
					if bs != nil {
						acc = float64(bs[co])
					}
					for ci := 0; ci < Cin; ci++ {
						for kh := 0; kh < KH; kh++ {
							for kw := 0; kw < KW; kw++ {
								y, xx := ho*s+kh-c.Padding, wo*s+kw-c.Padding
								if y < 0 || y >= H || xx < 0 || xx >= W {
									continue
								}
								acc += float64(ws[((co*Cin+ci)*KH+kh)*KW+kw]) * float64(xs[((bi*Cin+ci)*H+y)*W+xx])
							}
						}
					}
					if c.ReLU && acc < 0 {
						acc = 0
					}
					out.f32[((bi*Cout+co)*Ho+ho)*Wo+wo] = float32(acc)
				}
			}
		}
	}
	return out
}

// SimAMAddReLU computes each plane's statistics in float64.
func (b *Backend) SimAMAddReLU(x, residual compute.Tensor, lambda float32) compute.Tensor {
	xs, rs := f32Of(x, "SimAMAddReLU"), f32Of(residual, "SimAMAddReLU")
	xt := cast(x).shape
	if len(xt) != 4 || !slices.Equal(xt, cast(residual).shape) {
		panic(fmt.Sprintf("cpu.SimAMAddReLU: x %v residual %v", xt, cast(residual).shape))
	}
	hw := xt[2] * xt[3]
	out := newF32(xt...)
	b.parallelFor(xt[0]*xt[1], func(lo, hi int) {
		for p := lo; p < hi; p++ {
			src := xs[p*hw : (p+1)*hw]
			var sum float64
			for _, v := range src {
				sum += float64(v)
			}
			mean := sum / float64(hw)
			var ss float64
			for _, v := range src {
				d := float64(v) - mean
				ss += d * d
			}
			v := ss / float64(hw-1)
			inv := 1 / (4 * (v + float64(lambda)))
			dst, res := out.f32[p*hw:(p+1)*hw], rs[p*hw:(p+1)*hw]
			for i, xv := range src {
				d := float64(xv) - mean
				e := d*d*inv + 0.5
				y := float64(xv)/(1+math.Exp(-e)) + float64(res[i])
				dst[i] = float32(max(y, 0))
			}
		}
	})
	return out
}

// AttentiveStatsPool computes softmax and moments in float64.
func (b *Backend) AttentiveStatsPool(x, logits compute.Tensor, eps float32) compute.Tensor {
	xs, ls := f32Of(x, "AttentiveStatsPool"), f32Of(logits, "AttentiveStatsPool")
	xt := cast(x).shape
	if len(xt) != 3 || !slices.Equal(xt, cast(logits).shape) {
		panic(fmt.Sprintf("cpu.AttentiveStatsPool: x %v logits %v", xt, cast(logits).shape))
	}
	B, C, T := xt[0], xt[1], xt[2]
	out := newF32(B, 2*C)
	b.parallelFor(B*C, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			bi, ch := p/C, p%C
			xr, lr := xs[p*T:(p+1)*T], ls[p*T:(p+1)*T]
			m := math.Inf(-1)
			for _, v := range lr {
				m = max(m, float64(v))
			}
			var z, s1, s2 float64
			for i, v := range lr {
				e := math.Exp(float64(v) - m)
				xv := float64(xr[i])
				z += e
				s1 += e * xv
				s2 += e * xv * xv
			}
			mu := s1 / z
			out.f32[bi*2*C+ch] = float32(mu)
			out.f32[bi*2*C+C+ch] = float32(math.Sqrt(max(s2/z-mu*mu, float64(eps))))
		}
	})
	return out
}
