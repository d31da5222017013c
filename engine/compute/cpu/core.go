package cpu

import (
	"fmt"
	"math"
	"slices"

	"zonostream/engine/compute"
)

// dot is a float32 dot product with four partial sums (accuracy ~ K/4·ε,
// well inside the golden tolerances; see engine/zonos conformance).
func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot2BF16 is x0·w and x1·w for a bf16 row w, widening each weight once
// (four partial sums per product, as dot).
func dot2BF16(x0, x1 []float32, w []uint16) (float32, float32) {
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	n := len(w)
	x0, x1 = x0[:n], x1[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		w0 := math.Float32frombits(uint32(w[i]) << 16)
		w1 := math.Float32frombits(uint32(w[i+1]) << 16)
		w2 := math.Float32frombits(uint32(w[i+2]) << 16)
		w3 := math.Float32frombits(uint32(w[i+3]) << 16)
		a0 += x0[i] * w0
		a1 += x0[i+1] * w1
		a2 += x0[i+2] * w2
		a3 += x0[i+3] * w3
		b0 += x1[i] * w0
		b1 += x1[i+1] * w1
		b2 += x1[i+2] * w2
		b3 += x1[i+3] * w3
	}
	for ; i < n; i++ {
		wi := math.Float32frombits(uint32(w[i]) << 16)
		a0 += x0[i] * wi
		b0 += x1[i] * wi
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}

func (b *Backend) Linear(x, w, bias compute.Tensor) compute.Tensor {
	xt, wt := cast(x), cast(w)
	xs := f32Of(x, "Linear")
	if len(wt.shape) != 2 {
		panic(fmt.Sprintf("cpu.Linear: weight shape %v", wt.shape))
	}
	n, k := wt.shape[0], wt.shape[1]
	if xt.shape[len(xt.shape)-1] != k {
		panic(fmt.Sprintf("cpu.Linear: x %v with weight %v", xt.shape, wt.shape))
	}
	m := len(xs) / k
	var bs []float32
	if bias != nil {
		bs = cast(bias).floats()
		if len(bs) != n {
			panic(fmt.Sprintf("cpu.Linear: bias of %d for %d outputs", len(bs), n))
		}
	}
	shape := append(append([]int(nil), xt.shape[:len(xt.shape)-1]...), n)
	out := newF32(shape...)
	if wt.dt == compute.BF16 && m <= 2 {
		// Decode steps (one row per CFG branch): widen each bf16 weight
		// once, inside the dot, for every activation row at the same time.
		b.parallelFor(n, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				w := wt.u16[r*k : (r+1)*k]
				var br float32
				if bs != nil {
					br = bs[r]
				}
				if m == 2 {
					d0, d1 := dot2BF16(xs[:k], xs[k:2*k], w)
					out.f32[r], out.f32[n+r] = d0+br, d1+br
				} else if m == 1 {
					d0, _ := dot2BF16(xs[:k], xs[:k], w)
					out.f32[r] = d0 + br
				}
			}
		})
		return out
	}
	b.parallelFor(n, func(lo, hi int) {
		buf := make([]float32, k)
		for r := lo; r < hi; r++ {
			wr := wt.row(r, buf)
			var br float32
			if bs != nil {
				br = bs[r]
			}
			for i := 0; i < m; i++ {
				out.f32[i*n+r] = dot(xs[i*k:(i+1)*k], wr) + br
			}
		}
	})
	return out
}

func (b *Backend) Embedding(table, ids compute.Tensor) compute.Tensor {
	tt, it := cast(table), cast(ids)
	if it.dt != compute.I32 || len(tt.shape) != 2 {
		panic(fmt.Sprintf("cpu.Embedding: table %v ids %v", tt.shape, it.dt))
	}
	v, d := tt.shape[0], tt.shape[1]
	out := newF32(append(append([]int(nil), it.shape...), d)...)
	for i, id := range it.i32 {
		if id < 0 || int(id) >= v {
			panic(fmt.Sprintf("cpu.Embedding: id %d outside [0, %d)", id, v))
		}
		copy(out.f32[i*d:(i+1)*d], tt.row(int(id), out.f32[i*d:(i+1)*d]))
	}
	return out
}

func (b *Backend) Add(x, y compute.Tensor) compute.Tensor {
	xs, ys := f32Of(x, "Add"), f32Of(y, "Add")
	if !slices.Equal(cast(x).shape, cast(y).shape) {
		panic(fmt.Sprintf("cpu.Add: %v + %v", cast(x).shape, cast(y).shape))
	}
	out := newF32(cast(x).shape...)
	for i := range xs {
		out.f32[i] = xs[i] + ys[i]
	}
	return out
}

func (b *Backend) Scale(x compute.Tensor, s float32) compute.Tensor {
	xs := f32Of(x, "Scale")
	out := newF32(cast(x).shape...)
	for i, v := range xs {
		out.f32[i] = v * s
	}
	return out
}

func (b *Backend) CosSin(x compute.Tensor) compute.Tensor {
	xt := cast(x)
	xs := f32Of(x, "CosSin")
	n := xt.shape[len(xt.shape)-1]
	shape := append([]int(nil), xt.shape...)
	shape[len(shape)-1] = 2 * n
	out := newF32(shape...)
	for r := 0; r < len(xs)/n; r++ {
		for i := 0; i < n; i++ {
			v := float64(xs[r*n+i])
			out.f32[r*2*n+i] = float32(math.Cos(v))
			out.f32[r*2*n+n+i] = float32(math.Sin(v))
		}
	}
	return out
}

// layerNormRow normalises src into dst (float64 statistics).
func layerNormRow(dst, src, w, bias []float32, eps float32) {
	var sum float64
	for _, v := range src {
		sum += float64(v)
	}
	mean := sum / float64(len(src))
	var ss float64
	for _, v := range src {
		d := float64(v) - mean
		ss += d * d
	}
	rstd := 1 / math.Sqrt(ss/float64(len(src))+float64(eps))
	for i, v := range src {
		y := float32((float64(v) - mean) * rstd)
		y *= w[i]
		if bias != nil {
			y += bias[i]
		}
		dst[i] = y
	}
}

func (b *Backend) LayerNorm(x, w, bias compute.Tensor, eps float32) compute.Tensor {
	xt := cast(x)
	xs := f32Of(x, "LayerNorm")
	d := xt.shape[len(xt.shape)-1]
	ws := cast(w).floats()
	var bs []float32
	if bias != nil {
		bs = cast(bias).floats()
	}
	out := newF32(xt.shape...)
	b.parallelFor(len(xs)/d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			layerNormRow(out.f32[r*d:(r+1)*d], xs[r*d:(r+1)*d], ws, bs, eps)
		}
	})
	return out
}

func (b *Backend) AddLayerNorm(x, residual, w, bias compute.Tensor, eps float32) (compute.Tensor, compute.Tensor) {
	sum := x
	if residual != nil {
		sum = b.Add(x, residual)
	} else {
		sum = b.Reshape(x, cast(x).shape...)
	}
	return b.LayerNorm(sum, w, bias, eps), sum
}

func silu(v float32) float32 { return v / (1 + float32(math.Exp(float64(-v)))) }

func (b *Backend) SwiGLU(x compute.Tensor) compute.Tensor {
	xt := cast(x)
	xs := f32Of(x, "SwiGLU")
	d2 := xt.shape[len(xt.shape)-1]
	if d2%2 != 0 {
		panic(fmt.Sprintf("cpu.SwiGLU: odd last axis %v", xt.shape))
	}
	d := d2 / 2
	shape := append([]int(nil), xt.shape...)
	shape[len(shape)-1] = d
	out := newF32(shape...)
	for r := 0; r < len(xs)/d2; r++ {
		for i := 0; i < d; i++ {
			out.f32[r*d+i] = xs[r*d2+i] * silu(xs[r*d2+d+i])
		}
	}
	return out
}
