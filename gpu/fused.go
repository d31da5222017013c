//go:build cuda

package gpu

import (
	"fmt"
	"os"
	"slices"

	"zonostream/engine/compute"
)

// The fused projections of the decode step (compute.FusedProjections):
// gemv_m2_ln and gemv_m2_gated in kernels/core.cu compute the activation
// rows (a LayerNorm of the residual sum, Mamba2's RMS norm of the gated
// scan output) in the prologue of the weight-read GEMV, into dynamic
// shared memory, instead of a kernel of their own. They apply to the
// GEMV's shapes with M ≤ 2 rows (the CFG decode step of one utterance) and
// rows of at most 2048 (LayerNorm) or 4096 (one norm group) floats;
// anything else runs the composition.
//
// ZONOS_FUSE=0 turns them off (for measurements).
var fuseOff = os.Getenv("ZONOS_FUSE") == "0"

// fusedRows reports whether a fused GEMV serves m rows of k against w.
func fusedRows(m, k int, w *tensor) bool {
	return !fuseOff && m >= 1 && m <= 2 && k%8 == 0 && useGemvM2(m, k, w)
}

// fusedGemv launches kernel (a gemv_m2_* with a prologue) with the head
// arguments first, then the GEMV's own (owner goroutine).
func (b *Backend) fusedGemv(kernel string, head []any, w *tensor, bias *tensor, y *tensor, m, n, k int) {
	p := b.gemvPlanFor(n, k)
	p.kernel, p.rows = kernel, 4
	bp := nullPtr
	if bias != nil {
		bp = b.asF32(bias).ptr()
	}
	blocks := (n + p.rowsPerBlock() - 1) / p.rowsPerBlock()
	args := append(head, w.ptr(), bp, y.ptr(), int32(m), int32(n), int32(k), int32(p.ks), b2i(gemvEarly))
	b.launchShared(b.k[kernel], [3]int{blocks, 1, 1}, block256, 2*k*4, args...)
}

// linearShape checks a projection of x [..., K] by w [N, K] (+ bias [N])
// and returns the output shape and m, n, k.
func linearShape(op string, xt, wt, bt *tensor) (shape []int, m, n, k int) {
	if len(wt.shape) != 2 || wt.dt == compute.I32 {
		panic(fmt.Sprintf("gpu.%s: weight %v %v", op, wt.shape, wt.dt))
	}
	n, k = wt.shape[0], wt.shape[1]
	if len(xt.shape) == 0 || xt.shape[len(xt.shape)-1] != k {
		panic(fmt.Sprintf("gpu.%s: rows %v with weight %v", op, xt.shape, wt.shape))
	}
	if bt != nil && bt.n() != n {
		panic(fmt.Sprintf("gpu.%s: bias of %d for %d outputs", op, bt.n(), n))
	}
	return append(slices.Clone(xt.shape[:len(xt.shape)-1]), n), xt.n() / max(k, 1), n, k
}

func optTensor(t compute.Tensor) *tensor {
	if t == nil {
		return nil
	}
	return cast(t)
}

func (b *Backend) AddLayerNormLinear(x, residual, normW, normB compute.Tensor, eps float32, w, bias compute.Tensor) (compute.Tensor, compute.Tensor) {
	xt, wt, bt := f32Of(x, "AddLayerNormLinear"), cast(w), optTensor(bias)
	shape, m, n, k := linearShape("AddLayerNormLinear", xt, wt, bt)
	nw, nb := cast(normW), optTensor(normB)
	if !fusedRows(m, k, wt) || k > 2048 || nw.n() != k || (nb != nil && nb.n() != k) {
		out, sum := b.AddLayerNorm(x, residual, normW, normB, eps)
		return b.Linear(out, w, bias), sum
	}
	var rt *tensor
	if residual != nil {
		rt = f32Of(residual, "AddLayerNormLinear")
		if !slices.Equal(rt.shape, xt.shape) {
			panic(fmt.Sprintf("gpu.AddLayerNormLinear: %v + %v", xt.shape, rt.shape))
		}
	}
	var y, sum *tensor
	b.do(func() {
		y = b.newTensor(compute.F32, shape...)
		rp, sp, bp := nullPtr, nullPtr, nullPtr
		if rt != nil {
			sum = b.newTensor(compute.F32, xt.shape...)
			rp, sp = rt.ptr(), sum.ptr()
		}
		if nb != nil {
			bp = b.asF32(nb).ptr()
		}
		b.fusedGemv("gemv_m2_ln", []any{xt.ptr(), rp, b.asF32(nw).ptr(), bp, sp, eps}, wt, bt, y, m, n, k)
	})
	if rt == nil { // the sum is x itself, as AddLayerNorm returns it
		return y, b.Reshape(x, xt.shape...)
	}
	return y, sum
}

func (b *Backend) Mamba2Linear(zxbcdt compute.Tensor, mw compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec, w compute.Tensor) compute.Tensor {
	mx := b.mamba2Check(zxbcdt, mw, convState, ssmState, s)
	wt := cast(w)
	if len(wt.shape) != 2 || wt.shape[1] != s.DInner {
		panic(fmt.Sprintf("gpu.Mamba2Linear: out_proj %v for d_inner %d", wt.shape, s.DInner))
	}
	m, n, k := mx.B*mx.T, wt.shape[0], s.DInner
	if !fusedRows(m, k, wt) || k > 4096 || s.Groups != 1 {
		return b.Linear(b.Mamba2(zxbcdt, mw, convState, ssmState, s), w, nil)
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, mx.B, mx.T, n)
		y := b.mamba2Scan(mx)
		b.fusedGemv("gemv_m2_gated", []any{y.ptr(), b.asF32(mx.nw).ptr(), s.Eps}, wt, nil, out, m, n, k)
		y.h.release()
	})
	return out
}
