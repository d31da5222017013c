//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"os"
	"slices"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// attnMaxHeadDim is the widest head the attention kernel holds (ATT_MAXD).
const attnMaxHeadDim = 256

// attnSplits is how many blocks share one head's cache in a decode step
// (attn_split). Fixed, since a replayed step learns its length on the
// device; blocks past the length write empty partials.
const attnSplits = 32

func (b *Backend) Attention(q, k, v, kCache, vCache compute.Tensor, pos int, a compute.AttentionSpec) compute.Tensor {
	return b.attention(separateQKV(q, k, v, a), kCache, vCache, pos, nil, a)
}

// AttentionAt reads the first position from the device (compute.GraphOps).
// Its range is the caller's to check; the single-step shape is checked here.
func (b *Backend) AttentionAt(q, k, v, kCache, vCache, pos compute.Tensor, a compute.AttentionSpec) compute.Tensor {
	return b.attention(separateQKV(q, k, v, a), kCache, vCache, 0, posTensor(pos), a)
}

var _ compute.PackedAttention = (*Backend)(nil)

// AttentionPacked reads q, k and v straight out of the fused projection
// (compute.PackedAttention): three copies fewer per attention layer.
func (b *Backend) AttentionPacked(qkv, kCache, vCache compute.Tensor, pos int, posT compute.Tensor, a compute.AttentionSpec) compute.Tensor {
	t := f32Of(qkv, "AttentionPacked")
	H, Hk, Dh := a.Heads, a.KVHeads, a.HeadDim
	w := (H + 2*Hk) * Dh
	if len(t.shape) != 3 || t.shape[2] != w {
		panic(fmt.Sprintf("gpu.AttentionPacked: qkv %v for spec %+v (want [B, T, %d])", t.shape, a, w))
	}
	op := qkvOperands{q: t, k: t, v: t, kOff: H * Dh, vOff: (H + Hk) * Dh, ldq: w, ldkv: w, B: t.shape[0], T: t.shape[1]}
	var pt *tensor
	if posT != nil {
		pt = posTensor(posT)
	}
	return b.attention(op, kCache, vCache, pos, pt, a)
}

// posTensor checks a device position tensor: I32 [P], row b of the batch
// at position P[b mod P] (compute.GraphOps.AttentionAt); P must divide the
// batch, which attention checks.
func posTensor(pos compute.Tensor) *tensor {
	pt := cast(pos)
	if pt.dt != compute.I32 || len(pt.shape) != 1 || pt.n() < 1 {
		panic(fmt.Sprintf("gpu.AttentionAt: position tensor %v %v, want I32 [P]", pt.dt, pt.shape))
	}
	return pt
}

var _ compute.RaggedAttention = (*Backend)(nil)

// AttentionRagged is one decode step of a batch whose sequences stand at
// different positions (compute.RaggedAttention): the positions go to the
// device and the step runs as AttentionAt's, row b at pos[b mod len(pos)].
func (b *Backend) AttentionRagged(q, k, v, kCache, vCache compute.Tensor, pos []int, a compute.AttentionSpec) compute.Tensor {
	maxT := cast(kCache).shape[1]
	p := make([]int32, len(pos))
	for i, x := range pos {
		if x < 0 || x >= maxT {
			panic(fmt.Sprintf("gpu.AttentionRagged: position %d of row %d outside cache of %d", x, i, maxT))
		}
		p[i] = int32(x)
	}
	pt := b.FromI32(p, len(p))
	defer b.Free(pt)
	return b.AttentionAt(q, k, v, kCache, vCache, pt, a)
}

// qkvOperands locate q, k and v: tensors, element offsets into them and
// the floats between consecutive (b, t) rows.
type qkvOperands struct {
	q, k, v    *tensor
	kOff, vOff int
	ldq, ldkv  int
	B, T       int
}

func separateQKV(q, k, v compute.Tensor, a compute.AttentionSpec) qkvOperands {
	qt, kt, vt := f32Of(q, "Attention"), f32Of(k, "Attention"), f32Of(v, "Attention")
	H, Hk, Dh := a.Heads, a.KVHeads, a.HeadDim
	qs := qt.shape
	if len(qs) != 3 || len(kt.shape) != 3 || len(vt.shape) != 3 || qs[2] != H*Dh || kt.shape[2] != Hk*Dh ||
		!slices.Equal(kt.shape, vt.shape) || kt.shape[0] != qs[0] || kt.shape[1] != qs[1] {
		panic(fmt.Sprintf("gpu.Attention: q %v k %v v %v spec %+v", qs, kt.shape, vt.shape, a))
	}
	return qkvOperands{q: qt, k: kt, v: vt, ldq: H * Dh, ldkv: Hk * Dh, B: qs[0], T: qs[1]}
}

// attention checks the cache and launches the cache write and the
// attention; with pt set the position comes from the device and only
// T = 1 is checked against the cache here.
func (b *Backend) attention(op qkvOperands, kCache, vCache compute.Tensor, pos int, pt *tensor, a compute.AttentionSpec) compute.Tensor {
	kc, vc := f32Of(kCache, "Attention"), f32Of(vCache, "Attention")
	cs := kc.shape
	H, Hk, Dh := a.Heads, a.KVHeads, a.HeadDim
	B, T := op.B, op.T
	if len(cs) != 4 || Hk <= 0 || H%Hk != 0 || cs[0] != B || cs[2] != Hk || cs[3] != Dh || !slices.Equal(vc.shape, cs) {
		panic(fmt.Sprintf("gpu.Attention: [B %d, T %d] with cache %v spec %+v", B, T, cs, a))
	}
	maxT := cs[1]
	npos := 1
	if pt != nil {
		npos = pt.n()
		if T != 1 || B%npos != 0 {
			panic(fmt.Sprintf("gpu.AttentionAt: %d new positions for %d rows from %d device positions; want 1 new position, and device positions dividing the rows", T, B, npos))
		}
	}
	if pos < 0 || pos+T > maxT {
		panic(fmt.Sprintf("gpu.Attention: positions [%d,%d) outside cache of %d", pos, pos+T, maxT))
	}
	if Dh > attnMaxHeadDim {
		panic(fmt.Sprintf("gpu.Attention: head dim %d > %d", Dh, attnMaxHeadDim))
	}
	dr := a.RotaryDim
	// RotaryDim 0 means no rotary embedding (mamba_ssm MHA with
	// rotary_emb_dim = 0); the transformer backbone passes HeadDim.
	inter := 0
	if a.Rotary == compute.RotaryInterleaved {
		inter = 1
	}
	scale := float32(1 / math.Sqrt(float64(Dh)))
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, T, H*Dh)
		if B*T == 0 {
			return
		}
		pp := nullPtr
		if pt != nil {
			pp = pt.ptr()
		}
		qp := op.q.ptr()
		kp := op.k.ptr() + cu.DevicePtr(4*op.kOff)
		vp := op.v.ptr() + cu.DevicePtr(4*op.vOff)
		if T == 1 { // decode: spread the cache over attnSplits blocks per head (which also write the new row)
			part := b.newTensor(compute.F32, B*H*attnSplits*(Dh+2))
			b.launch(b.k["attn_split"], [3]int{B * H, attnSplits, 1}, [3]int{128, 1, 1}, qp, kp, vp, kc.ptr(), vc.ptr(), part.ptr(),
				H, Hk, Dh, maxT, pos, pp, npos, dr, inter, a.RotaryBase, scale, attnSplits, op.ldq, op.ldkv)
			b.launch(b.k["attn_merge"], [3]int{B * H, 1, 1}, [3]int{128, 1, 1}, part.ptr(), out.ptr(), Dh, attnSplits)
			part.h.release()
			return
		}
		b.launch(b.k["attn_cache"], grid1(B*T*Hk*Dh), block256, kp, vp, kc.ptr(), vc.ptr(),
			B, T, Hk, Dh, maxT, pos, pp, dr, inter, a.RotaryBase, op.ldkv)
		b.launch(b.k["attn"], [3]int{B * T * H, 1, 1}, [3]int{128, 1, 1}, qp, kc.ptr(), vc.ptr(), out.ptr(),
			T, H, Hk, Dh, maxT, pos, pp, dr, inter, a.RotaryBase, scale, op.ldq)
	})
	return out
}

// Mamba2 limits of the kernels (CONV_MAXK, SCAN_MAXN).
const (
	mambaMaxConv  = 16
	mambaMaxState = 256
	// mambaStepRows bounds the head dim mamba_step takes (8 warps × 8 rows).
	mambaStepRows = 64
)

// scanPreKernel is the prefill scan compiled for d_state n: the fewest
// slots per lane (mamba_scan_pre_nS, S·32 ≥ n) of S ∈ {1, 2, 4, 8}.
func scanPreKernel(n int) string {
	s := 1
	for s*32 < n {
		s *= 2
	}
	return fmt.Sprintf("mamba_scan_pre_n%d", s)
}

// mambaStepOff (ZONOS_MAMBA_STEP=0) runs the decode step's conv and scan as
// two kernels (mamba_conv, mamba_scan), for measurements.
var mambaStepOff = os.Getenv("ZONOS_MAMBA_STEP") == "0"

func (b *Backend) Mamba2(zxbcdt compute.Tensor, w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec) compute.Tensor {
	in := f32Of(zxbcdt, "Mamba2")
	shp := in.shape
	if len(shp) != 3 {
		panic(fmt.Sprintf("gpu.Mamba2: input %v", shp))
	}
	B, T, E := shp[0], shp[1], shp[2]
	Di, H, P, N, G, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.Groups, s.DConv
	C := Di + 2*G*N
	if G <= 0 || H%G != 0 || E != 2*Di+2*G*N+H || H*P != Di || Di%G != 0 {
		panic(fmt.Sprintf("gpu.Mamba2: input %v for spec %+v", shp, s))
	}
	if Kc < 1 || Kc > mambaMaxConv || N > mambaMaxState {
		panic(fmt.Sprintf("gpu.Mamba2: d_conv %d (≤ %d) d_state %d (≤ %d)", Kc, mambaMaxConv, N, mambaMaxState))
	}
	cst, sst := f32Of(convState, "Mamba2"), f32Of(ssmState, "Mamba2")
	if cst.n() != B*C*Kc || sst.n() != B*H*P*N {
		panic(fmt.Sprintf("gpu.Mamba2: state sizes %v %v for spec %+v", cst.shape, sst.shape, s))
	}
	cw, cb, dtb, alog, dd, nw := cast(w.ConvWeight), cast(w.ConvBias), cast(w.DtBias), cast(w.ALog), cast(w.D), cast(w.NormWeight)
	if cw.n() != C*Kc || cb.n() != C || dtb.n() != H || alog.n() != H || dd.n() != H || nw.n() != Di {
		panic(fmt.Sprintf("gpu.Mamba2: weight sizes %v %v %v %v %v %v for spec %+v", cw.shape, cb.shape, dtb.shape, alog.shape, dd.shape, nw.shape, s))
	}
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, T, Di)
		if B*T == 0 {
			return
		}
		y := b.newTensor(compute.F32, B, T, Di)
		th, v4 := v4Threads(Di / G)
		v4 = v4 && Di%4 == 0 && E%4 == 0
		roll := nullPtr
		var xbc *tensor // the conv's output, where it is not kept in shared memory
		switch {
		case T == 1 && v4 && P <= mambaStepRows && !mambaStepOff: // decode: conv and scan in one kernel
			b.launch(b.k["mamba_step"], [3]int{B * H, 1, 1}, block256, in.ptr(), b.asF32(cw).ptr(), b.asF32(cb).ptr(),
				cst.ptr(), b.asF32(dtb).ptr(), b.asF32(alog).ptr(), b.asF32(dd).ptr(), sst.ptr(), y.ptr(), E, Di, C, H, P, N, G, Kc)
			roll = cst.ptr()
		case T == 1: // decode: one pass each
			xbc = b.newTensor(compute.F32, B, T, C)
			b.launch(b.k["mamba_conv"], grid1(B*C), block256, in.ptr(), b.asF32(cw).ptr(), b.asF32(cb).ptr(),
				cst.ptr(), xbc.ptr(), B, T, E, Di, C, Kc)
			b.launch(b.k["mamba_scan"], [3]int{B * H, (P + 7) / 8, 1}, block256, in.ptr(), xbc.ptr(),
				b.asF32(dtb).ptr(), b.asF32(alog).ptr(), b.asF32(dd).ptr(), sst.ptr(), y.ptr(), T, E, Di, C, H, P, N, G)
		default: // prefill: the parallel parts out of the recurrence
			xbc = b.newTensor(compute.F32, B, T, C)
			b.launch(b.k["mamba_conv_par"], grid1(B*T*C), block256, in.ptr(), b.asF32(cw).ptr(), b.asF32(cb).ptr(),
				cst.ptr(), xbc.ptr(), B, T, E, Di, C, Kc)
			b.launch(b.k["mamba_conv_state"], grid1(B*C), block256, in.ptr(), cst.ptr(), B, T, E, Di, C, Kc)
			dt := b.newTensor(compute.F32, B, T, H, 2)
			b.launch(b.k["mamba_dt"], grid1(B*T*H), block256, in.ptr(), b.asF32(dtb).ptr(), b.asF32(alog).ptr(), dt.ptr(),
				B, T, E, Di, C, H)
			b.launch(b.k[scanPreKernel(N)], [3]int{B * H, (P + 7) / 8, 1}, block256, dt.ptr(), xbc.ptr(),
				b.asF32(dd).ptr(), sst.ptr(), y.ptr(), T, Di, C, H, P, N, G)
			dt.h.release()
		}
		if v4 {
			b.launch(b.k["mamba_norm_v4"], [3]int{B * T * G, 1, 1}, [3]int{th, 1, 1}, y.ptr(), in.ptr(), b.asF32(nw).ptr(), out.ptr(),
				Di, G, E, s.Eps, roll, C, Kc)
		} else {
			b.launch(b.k["mamba_norm"], [3]int{B * T * G, 1, 1}, block256, y.ptr(), in.ptr(), b.asF32(nw).ptr(), out.ptr(),
				Di, G, E, s.Eps)
		}
		if xbc != nil {
			xbc.h.release()
		}
		y.h.release()
	})
	return out
}

// mambaBlockOff (ZONOS_MAMBA_BLOCK=0) declines Mamba2Block: the three ops
// run instead (for measurements).
var mambaBlockOff = os.Getenv("ZONOS_MAMBA_BLOCK") == "0"

// Mamba2Block (compute.Mamba2Block) runs a decode step's Mamba2 residual
// block (one or two rows, one position) in three kernels instead of five
// on Hopper: in_proj as the chunk GEMV that applies the pre-norm as it
// loads its input and runs the conv (rolling its state) in its epilogue
// (gemv_chunk_lnconv), the scan gating its output and summing its squares
// per head (mamba_step_gated), and out_proj as the chunk GEMV that applies
// the gated RMSNorm as it loads its input (gemv_chunk_norm). It declines
// (ok false) for prefill, batches of more than one utterance, more than
// one norm group, and shapes the chunk GEMV or mamba_step do not take.
func (b *Backend) Mamba2Block(x, residual compute.Tensor, pre compute.Norm, inProj, outProj compute.Tensor, w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec) (compute.Tensor, compute.Tensor, bool) {
	if mambaBlockOff {
		return nil, nil, false
	}
	xt, wo := f32Of(x, "Mamba2Block"), cast(outProj)
	Di, H, P, N, G, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.Groups, s.DConv
	C := Di + 2*G*N
	if !b.normedLinearFits(xt, residual, pre, inProj) || len(wo.shape) != 2 || wo.dt != compute.BF16 ||
		cast(inProj).shape[0] != 2*Di+2*G*N+H || wo.shape[1] != Di || gemvKT(Di) == 0 ||
		G != 1 || H*P != Di || P > mambaStepRows || N > mambaMaxState || Kc < 1 || Kc > mambaMaxConv {
		return nil, nil, false
	}
	B := xt.shape[0]
	cst, sst := f32Of(convState, "Mamba2Block"), f32Of(ssmState, "Mamba2Block")
	cw, cb, dtb, alog, dd, nw := cast(w.ConvWeight), cast(w.ConvBias), cast(w.DtBias), cast(w.ALog), cast(w.D), cast(w.NormWeight)
	if cst.n() != B*C*Kc || sst.n() != B*H*P*N || cw.n() != C*Kc || cb.n() != C || dtb.n() != H || alog.n() != H || dd.n() != H || nw.n() != Di {
		panic(fmt.Sprintf("gpu.Mamba2Block: state or weight sizes for spec %+v", s))
	}
	Dm := wo.shape[0]
	var out, sum *tensor
	b.do(func() {
		var zx *tensor
		xbc := b.newTensor(compute.F32, B, C)
		zx, sum = b.normedLinear("gemv_chunk_lnconv", xt, residual, pre, cast(inProj),
			b.asF32(cw).ptr(), b.asF32(cb).ptr(), cst.ptr(), xbc.ptr(), int32(Di), int32(C), int32(Kc))
		E := zx.shape[len(zx.shape)-1]
		yg := b.newTensor(compute.F32, B, Di)
		part := b.newTensor(compute.F32, B, H, 2) // doubles
		b.launch(b.k["mamba_step_gated"], [3]int{B * H, 1, 1}, block256, zx.ptr(), xbc.ptr(), b.asF32(dtb).ptr(),
			b.asF32(alog).ptr(), b.asF32(dd).ptr(), sst.ptr(), yg.ptr(), part.ptr(), E, Di, C, H, P, N, G)
		out = b.newTensor(compute.F32, B, 1, Dm)
		b.launchSmem(b.k[fmt.Sprintf("gemv_chunk_norm_k%d", gemvKT(Di))], [3]int{(Dm + gemvChunkRows(Di) - 1) / gemvChunkRows(Di), 1, 1}, block256,
			kernels.GemvChunkPieces*4096, yg.ptr(), wo.ptr(), nullPtr, out.ptr(), int32(B), int32(Dm), int32(Di), b2i(gemvChunkEarly),
			part.ptr(), int32(H), b.asF32(nw).ptr(), s.Eps)
		for _, t := range []*tensor{zx, xbc, yg, part} {
			t.h.release()
		}
	})
	return out, b.streamOf(x, sum), true
}

// normedLinearFits reports whether the chunk GEMV with the pre-norm on
// load (AddNormLinear, Mamba2Block's in_proj) takes x [B, 1, K] (B ≤ 2),
// its residual and norm, and the BF16 weight w [N, K].
func (b *Backend) normedLinearFits(xt *tensor, residual compute.Tensor, pre compute.Norm, w compute.Tensor) bool {
	if !b.hopper || gemvChunkOff {
		return false
	}
	wt := cast(w)
	if len(xt.shape) != 3 || xt.shape[1] != 1 || xt.shape[0] < 1 || xt.shape[0] > 2 || len(wt.shape) != 2 || wt.dt != compute.BF16 {
		return false
	}
	k := xt.shape[2]
	if wt.shape[1] != k || gemvKT(k) == 0 || pre.W == nil || cast(pre.W).n() != k || (pre.B != nil && cast(pre.B).n() != k) {
		return false
	}
	return residual == nil || slices.Equal(cast(residual).shape, xt.shape)
}

// normedLinear launches kernel (gemv_chunk_ln or gemv_chunk_lnconv, with
// extra its conv arguments) for y = Linear(LayerNorm(x + residual), w) and
// returns y [B, N] and the new residual stream [B, 1, K] (nil where
// residual is nil: the stream is x). Owner goroutine; normedLinearFits holds.
func (b *Backend) normedLinear(kernel string, xt *tensor, residual compute.Tensor, pre compute.Norm, wt *tensor, extra ...any) (y, sum *tensor) {
	B, k, n := xt.shape[0], xt.shape[2], wt.shape[0]
	y = b.newTensor(compute.F32, B, n)
	res, sumPtr := nullPtr, nullPtr
	if residual != nil {
		res = f32Of(residual, "AddNormLinear").ptr()
		sum = b.newTensor(compute.F32, xt.shape...)
		sumPtr = sum.ptr()
	}
	lnb := nullPtr
	if pre.B != nil {
		lnb = b.asF32(cast(pre.B)).ptr()
	}
	args := []any{xt.ptr(), wt.ptr(), nullPtr, y.ptr(), int32(B), int32(n), int32(k), b2i(gemvChunkEarly),
		res, b.asF32(cast(pre.W)).ptr(), lnb, pre.Eps, sumPtr}
	b.launchSmem(b.k[fmt.Sprintf("%s_k%d", kernel, gemvKT(k))], [3]int{(n + gemvChunkRows(k) - 1) / gemvChunkRows(k), 1, 1}, block256,
		kernels.GemvChunkPieces*4096, append(args, extra...)...)
	return y, sum
}

// AddNormLinear (compute.NormedLinear): a decode step's pre-norm and the
// projection it feeds as one chunk GEMV (gemv_chunk_ln) on Hopper, for one
// or two rows and a BF16 weight of a K the chunk GEMV takes; declines
// (ok false) elsewhere.
func (b *Backend) AddNormLinear(x, residual compute.Tensor, pre compute.Norm, w compute.Tensor) (compute.Tensor, compute.Tensor, bool) {
	if normedLinearOff {
		return nil, nil, false
	}
	xt := f32Of(x, "AddNormLinear")
	if !b.normedLinearFits(xt, residual, pre, w) {
		return nil, nil, false
	}
	var y, sum *tensor
	b.do(func() { y, sum = b.normedLinear("gemv_chunk_ln", xt, residual, pre, cast(w)) })
	return b.Reshape(y, xt.shape[0], 1, y.shape[1]), b.streamOf(x, sum), true
}

// streamOf is the residual stream normedLinear returned: sum, or x where
// there was no residual (sum nil).
func (b *Backend) streamOf(x compute.Tensor, sum *tensor) compute.Tensor {
	if sum == nil {
		return b.Reshape(x, x.Shape()...)
	}
	return sum
}

// normedLinearOff (ZONOS_NORMED_LINEAR=0) declines AddNormLinear: the
// norm and the projection run as two kernels (for measurements).
var normedLinearOff = os.Getenv("ZONOS_NORMED_LINEAR") == "0"
