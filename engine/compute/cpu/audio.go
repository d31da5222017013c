package cpu

import (
	"fmt"
	"math"

	"zonostream/engine/compute"
)

// The DAC decoder spends nearly all its time in Conv1d and ConvTranspose1d
// (1.6 GFLOP per 11.6 ms frame for dac_44khz). Both are computed here as
// dot products over contiguous channel vectors: the input is transposed to
// time-major [T][Cin] with zero rows for the padding, the weight to
// [Cout][K][Cin], and a 4-output-channel × 2-position register block
// accumulates in float64. Every output position is computed by the same
// sequence of operations wherever it lies (interior or next to padding), so
// a window of a longer signal reproduces the long decode bit for bit, which
// the DAC streamer's exactness rests on. conv1dRef / convTranspose1dRef are
// the plain loops they are tested against (audio_test.go) and still serve
// grouped convolutions.

// Conv1d: x [B, Cin, T], w [Cout, Cin/groups, K], b [Cout] or nil.
func (b *Backend) Conv1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	c = c.Normalized()
	xs := f32Of(x, "Conv1d")
	xt, wt := cast(x).shape, cast(w)
	if len(xt) != 3 || len(wt.shape) != 3 {
		panic(fmt.Sprintf("cpu.Conv1d: x %v w %v", xt, wt.shape))
	}
	B, Cin, T := xt[0], xt[1], xt[2]
	Cout, Cg, K := wt.shape[0], wt.shape[1], wt.shape[2]
	if Cg*c.Groups != Cin || Cout%c.Groups != 0 {
		panic(fmt.Sprintf("cpu.Conv1d: x %v w %v groups %d", xt, wt.shape, c.Groups))
	}
	Tout := (T+2*c.Padding-c.Dilation*(K-1)-1)/c.Stride + 1
	if Tout <= 0 {
		panic(fmt.Sprintf("cpu.Conv1d: input %v too short for kernel %d", xt, K))
	}
	bs := biasOf(bias, Cout, "Conv1d")
	if c.Groups != 1 {
		return b.conv1dRef(xs, xt, wt.floats(), wt.shape, bs, c)
	}
	ws := wt.floats()
	// wT[co][k][ci]
	wT := make([]float32, len(ws))
	b.parallelFor(Cout, func(lo, hi int) {
		for co := lo; co < hi; co++ {
			for ci := 0; ci < Cin; ci++ {
				for k := 0; k < K; k++ {
					wT[(co*K+k)*Cin+ci] = ws[(co*Cin+ci)*K+k]
				}
			}
		}
	})
	out := newF32(B, Cout, Tout)
	// Padded time-major input: row r holds position r − Padding; the rows
	// past T (up to the last position any output reads) are zero too.
	rows := (Tout-1)*c.Stride + (K-1)*c.Dilation + 1
	rows = max(rows, T+c.Padding)
	xT := make([]float32, rows*Cin)
	for bi := 0; bi < B; bi++ {
		clear(xT)
		transposeIn(xT, xs[bi*Cin*T:(bi+1)*Cin*T], Cin, T, c.Padding)
		o := out.f32[bi*Cout*Tout : (bi+1)*Cout*Tout]
		blocks := (Cout + 3) / 4
		b.parallelFor(blocks, func(lo, hi int) {
			var taps [4][]float32
			for blk := lo; blk < hi; blk++ {
				co0 := blk * 4
				n := min(4, Cout-co0)
				for t := 0; t < Tout; t += 2 {
					pair := t+1 < Tout
					var acc [8]float64
					for k := 0; k < K; k++ {
						p0 := t*c.Stride + k*c.Dilation
						x0 := xT[p0*Cin : (p0+1)*Cin]
						x1 := x0
						if pair {
							p1 := p0 + c.Stride
							x1 = xT[p1*Cin : (p1+1)*Cin]
						}
						for j := 0; j < 4; j++ {
							cj := co0 + min(j, n-1)
							taps[j] = wT[(cj*K+k)*Cin : (cj*K+k+1)*Cin]
						}
						dot4x2(&acc, x0, x1, taps[0], taps[1], taps[2], taps[3])
					}
					storeTile(o, Tout, co0, n, bs, &acc, t, t+1, pair)
				}
			}
		})
	}
	return out
}

// transposeIn writes x [C][T] into dst as time-major rows starting at row
// off (dst must be zeroed and hold at least (off+T)·C values).
func transposeIn(dst, x []float32, C, T, off int) {
	for ci := 0; ci < C; ci++ {
		row := x[ci*T : (ci+1)*T]
		for t, v := range row {
			dst[(off+t)*C+ci] = v
		}
	}
}

// dot4x2 adds to acc the dot products of x0 and x1 with four weight vectors:
// acc[2j] += wj·x0, acc[2j+1] += wj·x1, accumulating in float64 in index
// order.
func dot4x2(acc *[8]float64, x0, x1, w0, w1, w2, w3 []float32) {
	n := len(x0)
	x1, w0, w1, w2, w3 = x1[:n], w0[:n], w1[:n], w2[:n], w3[:n]
	a0, a1, a2, a3, a4, a5, a6, a7 := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]
	for i := 0; i < n; i++ {
		u, v := float64(x0[i]), float64(x1[i])
		w := float64(w0[i])
		a0 += w * u
		a1 += w * v
		w = float64(w1[i])
		a2 += w * u
		a3 += w * v
		w = float64(w2[i])
		a4 += w * u
		a5 += w * v
		w = float64(w3[i])
		a6 += w * u
		a7 += w * v
	}
	acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7] = a0, a1, a2, a3, a4, a5, a6, a7
}

func biasOf(bias compute.Tensor, n int, op string) []float32 {
	if bias == nil {
		return nil
	}
	bs := cast(bias).floats()
	if len(bs) != n {
		panic(fmt.Sprintf("cpu.%s: bias of %d for %d outputs", op, len(bs), n))
	}
	return bs
}

// conv1dRef is the plain loop: every output accumulates bias + Σ w·x in
// float32, skipping taps that fall into the padding.
func (b *Backend) conv1dRef(xs []float32, xt []int, ws []float32, wshape []int, bs []float32, c compute.Conv1dSpec) compute.Tensor {
	B, Cin, T := xt[0], xt[1], xt[2]
	Cout, Cg, K := wshape[0], wshape[1], wshape[2]
	Tout := (T+2*c.Padding-c.Dilation*(K-1)-1)/c.Stride + 1
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

// ConvTranspose1d: x [B, Cin, T], w [Cin, Cout, K], b [Cout] or nil. Output
// o receives input t through tap k = o + Padding − t·Stride; grouping the
// outputs by phase r = (o + Padding) mod Stride, output o reads taps k = r +
// j·Stride at inputs t = ⌊(o + Padding)/Stride⌋ − j, and outputs o and
// o + Stride share their taps, which is the register block.
func (b *Backend) ConvTranspose1d(x, w, bias compute.Tensor, c compute.Conv1dSpec) compute.Tensor {
	c = c.Normalized()
	xs := f32Of(x, "ConvTranspose1d")
	xt, wt := cast(x).shape, cast(w)
	if len(xt) != 3 || len(wt.shape) != 3 || wt.shape[0] != xt[1] || c.Groups != 1 {
		panic(fmt.Sprintf("cpu.ConvTranspose1d: x %v w %v groups %d", xt, wt.shape, c.Groups))
	}
	B, Cin, T := xt[0], xt[1], xt[2]
	Cout, K := wt.shape[1], wt.shape[2]
	Tout := (T-1)*c.Stride - 2*c.Padding + c.Dilation*(K-1) + 1 + c.OutPadding
	if Tout <= 0 {
		panic(fmt.Sprintf("cpu.ConvTranspose1d: x %v w %v gives %d outputs", xt, wt.shape, Tout))
	}
	bs := biasOf(bias, Cout, "ConvTranspose1d")
	ws := wt.floats()
	if c.Dilation != 1 {
		return b.convTranspose1dRef(xs, xt, ws, wt.shape, bs, c)
	}
	s := c.Stride
	J := (K + s - 1) / s // taps per output, at most
	// wT[co][k][ci], with k padded to J·s taps of zeros.
	Kp := J * s
	wT := make([]float32, Cout*Kp*Cin)
	b.parallelFor(Cout, func(lo, hi int) {
		for co := lo; co < hi; co++ {
			for ci := 0; ci < Cin; ci++ {
				for k := 0; k < K; k++ {
					wT[(co*Kp+k)*Cin+ci] = ws[(ci*Cout+co)*K+k]
				}
			}
		}
	})
	// Time-major input with J zero rows before (t < 0) and enough after
	// (t ≥ T) for every base = ⌊(o + Padding)/s⌋ with o < Tout.
	lastBase := (Tout - 1 + c.Padding + s) / s // +1 for the paired output
	rows := J + max(lastBase+1, T)
	xT := make([]float32, rows*Cin)
	out := newF32(B, Cout, Tout)
	for bi := 0; bi < B; bi++ {
		clear(xT)
		transposeIn(xT, xs[bi*Cin*T:(bi+1)*Cin*T], Cin, T, J)
		o := out.f32[bi*Cout*Tout : (bi+1)*Cout*Tout]
		blocks := (Cout + 3) / 4
		b.parallelFor(blocks, func(lo, hi int) {
			var taps [4][]float32
			for blk := lo; blk < hi; blk++ {
				co0 := blk * 4
				n := min(4, Cout-co0)
				for r := 0; r < s; r++ {
					// outputs with (o + Padding) mod s == r, ascending
					first := ((r-c.Padding)%s + s) % s
					for oo := first; oo < Tout; oo += 2 * s {
						pair := oo+s < Tout
						base := (oo + c.Padding) / s
						var acc [8]float64
						for j := 0; j < J; j++ {
							k := r + j*s
							row := base - j + J
							x0 := xT[row*Cin : (row+1)*Cin]
							x1 := xT[(row+1)*Cin : (row+2)*Cin]
							for q := 0; q < 4; q++ {
								cq := co0 + min(q, n-1)
								taps[q] = wT[(cq*Kp+k)*Cin : (cq*Kp+k+1)*Cin]
							}
							dot4x2(&acc, x0, x1, taps[0], taps[1], taps[2], taps[3])
						}
						storeTile(o, Tout, co0, n, bs, &acc, oo, oo+s, pair)
					}
				}
			}
		})
	}
	return out
}

// convTranspose1dRef is the plain scatter loop (float32, bias first).
func (b *Backend) convTranspose1dRef(xs []float32, xt []int, ws []float32, wshape []int, bs []float32, c compute.Conv1dSpec) compute.Tensor {
	B, Cin, T := xt[0], xt[1], xt[2]
	Cout, K := wshape[1], wshape[2]
	Tout := (T-1)*c.Stride - 2*c.Padding + c.Dilation*(K-1) + 1 + c.OutPadding
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
				s := float32(sin32(float64(a * xs[t])))
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

// sin32 is sin(x) to float32 accuracy, ~4× faster than math.Sin: Cody-Waite
// reduction by π/2 in float64 (exact enough for |x| < 2²⁰, beyond which it
// falls back to math.Sin) and FreeBSD's float kernels (k_sinf.c, k_cosf.c)
// evaluated in float64, whose error stays well under a float32 ulp (tested
// against math.Sin in audio_test.go). Snake calls it once per element, and
// in the DAC decoder that is most of the non-convolution time.
func sin32(x float64) float64 {
	if !(math.Abs(x) < 1<<20) {
		return math.Sin(x)
	}
	const (
		invPio2 = 6.36619772367581382433e-01
		pio2a   = 1.57079632673412561417e+00 // first 33 bits of π/2
		pio2b   = 6.07710050650619224932e-11 // π/2 − pio2a
		s1      = -0.166666666416265235595
		s2      = 0.0083333293858894631756
		s3      = -0.000198393348360966317347
		s4      = 0.0000027183114939898219064
		c0      = -0.499999997251031003120
		c1      = 0.0416666233237390631894
		c2      = -0.00138867637746099294692
		c3      = 0.0000243904487962774090654
	)
	k := math.Round(x * invPio2)
	r := (x - k*pio2a) - k*pio2b
	z := r * r
	var v float64
	if int64(k)&1 == 0 {
		v = r + r*z*(s1+z*(s2+z*(s3+z*s4)))
	} else {
		v = 1 + z*(c0+z*(c1+z*(c2+z*c3)))
	}
	if int64(k)&2 != 0 {
		v = -v
	}
	return v
}

// storeTile writes a 4-channel × 2-position accumulator tile (n ≤ 4
// channels from co0) plus bias into the output rows at positions t0 and,
// when pair, t1 — the epilogue of both convolutions.
func storeTile(o []float32, Tout, co0, n int, bs []float32, acc *[8]float64, t0, t1 int, pair bool) {
	for j := 0; j < n; j++ {
		row := o[(co0+j)*Tout : (co0+j+1)*Tout]
		var bv float64
		if bs != nil {
			bv = float64(bs[co0+j])
		}
		row[t0] = float32(acc[2*j] + bv)
		if pair {
			row[t1] = float32(acc[2*j+1] + bv)
		}
	}
}
