//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// attnMaxHeadDim is the widest head the attention kernel holds (ATT_MAXD).
const attnMaxHeadDim = 256

// attnSplits is how many blocks share one head's cache in a decode step
// (attn_split). Fixed, since a replayed step learns its length on the
// device; blocks past the length write empty partials.
const attnSplits = 32

// Attention (compute.SequenceOps) reads q, k and v straight out of the
// fused projection qkv (no copies) for Start and Dev positions; Dev, an
// I32 [P] tensor, is read by the kernels at run time, so a recorded step
// replays at every position. Rows go to the device as such a tensor and
// the step runs as Dev's, on q, k and v copied out of qkv.
func (b *Backend) Attention(qkv, kCache, vCache compute.Tensor, at compute.Positions, a compute.AttentionSpec) compute.Tensor {
	switch {
	case at.Dev != nil:
		return b.attention(packedQKV(qkv, a), kCache, vCache, 0, posTensor(at.Dev), a)
	case at.Rows != nil:
		return b.attentionRows(qkv, kCache, vCache, at.Rows, a)
	}
	return b.attention(packedQKV(qkv, a), kCache, vCache, at.Start, nil, a)
}

// packedQKV locates q, k and v in the fused projection qkv [B, T, (H +
// 2·Hkv)·Dh].
func packedQKV(qkv compute.Tensor, a compute.AttentionSpec) qkvOperands {
	t := f32Of(qkv, "Attention")
	H, Hk, Dh := a.Heads, a.KVHeads, a.HeadDim
	w := (H + 2*Hk) * Dh
	if len(t.shape) != 3 || t.shape[2] != w {
		panic(fmt.Sprintf("gpu.Attention: qkv %v for spec %+v (want [B, T, %d])", t.shape, a, w))
	}
	return qkvOperands{q: t, k: t, v: t, kOff: H * Dh, vOff: (H + Hk) * Dh, ldq: w, ldkv: w, B: t.shape[0], T: t.shape[1]}
}

// posTensor checks a device position tensor: I32 [P], row b of the batch
// at position P[b mod P] (compute.Positions.Dev); P must divide the batch,
// which attention checks.
func posTensor(pos compute.Tensor) *tensor {
	pt := cast(pos)
	if pt.dt != compute.I32 || len(pt.shape) != 1 || pt.n() < 1 {
		panic(fmt.Sprintf("gpu.Attention: position tensor %v %v, want I32 [P]", pt.dt, pt.shape))
	}
	return pt
}

// attentionRows is one decode step of a batch whose sequences stand at
// different positions (compute.Positions.Rows): q, k and v are sliced out
// of qkv, the positions go to the device, and the step runs as Dev's, row
// b at pos[b mod len(pos)].
func (b *Backend) attentionRows(qkv, kCache, vCache compute.Tensor, pos []int, a compute.AttentionSpec) compute.Tensor {
	maxT := cast(kCache).shape[1]
	p := make([]int32, len(pos))
	for i, x := range pos {
		if x < 0 || x >= maxT {
			panic(fmt.Sprintf("gpu.Attention: position %d of row %d outside cache of %d", x, i, maxT))
		}
		p[i] = int32(x)
	}
	qn, kn := a.Heads*a.HeadDim, a.KVHeads*a.HeadDim
	q, k, v := b.Slice(qkv, 2, 0, qn), b.Slice(qkv, 2, qn, qn+kn), b.Slice(qkv, 2, qn+kn, qn+2*kn)
	pt := b.FromI32(p, len(p))
	o := b.attention(separateQKV(q, k, v, a), kCache, vCache, 0, posTensor(pt), a)
	for _, t := range []compute.Tensor{pt, q, k, v} {
		b.Free(t)
	}
	return o
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
			panic(fmt.Sprintf("gpu.Attention: %d new positions for %d rows from %d device positions; want 1 new position, and device positions dividing the rows", T, B, npos))
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
		if T == 1 && b.attnStepFits(H, Hk, Dh) { // decode: one kernel, a cluster per (row, KV head)
			b.launchCluster(b.k["attn_step"], [3]int{B * Hk * attnStepCluster, 1, 1}, [3]int{attnStepThreads, 1, 1}, attnStepCluster,
				qp, kp, vp, kc.ptr(), vc.ptr(), out.ptr(), H, Hk, Dh, maxT, pos, pp, npos, dr, inter, a.RotaryBase, scale, op.ldq, op.ldkv)
			return
		}
		if T == 1 { // decode: spread the cache over attnSplits blocks per head (which also write the new row)
			part := b.newTensor(compute.F32, B*H*attnSplits*(Dh+2))
			b.launch(b.k["attn_split"], [3]int{B * H, attnSplits, 1}, [3]int{128, 1, 1}, qp, kp, vp, kc.ptr(), vc.ptr(), part.ptr(),
				H, Hk, Dh, maxT, pos, pp, npos, dr, inter, a.RotaryBase, scale, attnSplits, op.ldq, op.ldkv)
			b.launch(b.k["attn_merge"], [3]int{B * H, 1, 1}, [3]int{128, 1, 1}, part.ptr(), out.ptr(), Dh, attnSplits)
			part.h.release()
			return
		}
		tab := nullPtr // the prefill's rotary angles
		if dr > 0 {
			tab = b.rotaryTable(pos, T, dr, a.RotaryBase)
		}
		b.launch(b.k["attn_cache"], grid1(B*T*Hk*Dh), block256, kp, vp, kc.ptr(), vc.ptr(),
			B, T, Hk, Dh, maxT, pos, pp, dr, inter, a.RotaryBase, op.ldkv, tab)
		if attnPreFits(H, Hk, Dh) { // prefill (T > 1 here): the cached rows through shared memory, scored a lane each
			Q := attnPreWarps / (H / Hk) // query positions a block
			tiles := (T + Q - 1) / Q
			b.launch(b.k["attn_pre"], [3]int{B * Hk * tiles, 1, 1}, [3]int{32 * attnPreWarps, 1, 1}, qp, kc.ptr(), vc.ptr(), out.ptr(),
				T, H, Hk, Dh, maxT, pos, dr, inter, scale, op.ldq, Q, tab)
			return
		}
		b.launch(b.k["attn"], [3]int{B * T * H, 1, 1}, [3]int{128, 1, 1}, qp, kc.ptr(), vc.ptr(), out.ptr(),
			T, H, Hk, Dh, maxT, pos, pp, dr, inter, a.RotaryBase, scale, op.ldq)
	})
	return out
}

// attn_step's geometry (ATS_S, ATS_W·32, ATS_G, ATS_D in
// kernels/attention.cu).
const (
	attnStepThreads = 512
	attnStepGroup   = 4
	attnStepMaxDim  = 128
)

// attnStepCluster is attn_step's cluster size (ATS_S): 8 blocks share a
// (row, KV head), 128 warps walking its cached positions.
const attnStepCluster = 8

// attnStepFits reports whether attn_step takes a decode step of H query
// heads over Hk KV heads of dimension Dh: clusters (the plan's
// clusterAttention), Dh ≤ 128 in float4s, at most 4 query heads per KV
// head.
func (b *Backend) attnStepFits(H, Hk, Dh int) bool {
	return b.clusterAttention && Dh%4 == 0 && Dh <= attnStepMaxDim && H/Hk <= attnStepGroup
}

// rotTable is rot_table's (cos, sin) of positions [pos, pos+T) at dr/2
// frequencies: a prefill's attention layers all rotate the same positions,
// so the lane keeps the last table and the next layer reuses it.
type rotTable struct {
	pos, T, dr int
	base       float64
	t          *tensor
}

// rotaryTable returns the table for positions [pos, pos+T) (owner
// goroutine), made by rot_table unless the last one is for the same
// positions. A replaced table goes back to the pool in stream order, after
// the kernels that read it.
func (b *Backend) rotaryTable(pos, T, dr int, base float64) cu.DevicePtr {
	if r := b.rot; r != nil && r.pos == pos && r.T == T && r.dr == dr && r.base == base {
		return r.t.ptr()
	}
	if b.rot != nil {
		b.rot.t.h.release()
	}
	t := b.newTensor(compute.F32, T, dr) // [T][dr/2] float2
	b.launch(b.k["rot_table"], grid1(T*dr/2), block256, t.ptr(), pos, T, dr, base)
	b.rot = &rotTable{pos: pos, T: T, dr: dr, base: base, t: t}
	return t.ptr()
}

// attn_pre's geometry (ATP_W, ATP_D in kernels/attention.cu): warps a
// block (each a query position and head), widest head.
const (
	attnPreWarps  = 8
	attnPreMaxDim = 128
)

// attnPreFits reports whether attn_pre takes a prefill of H query heads
// over Hk KV heads of dimension Dh.
func attnPreFits(H, Hk, Dh int) bool {
	return Dh%4 == 0 && Dh <= attnPreMaxDim && H/Hk <= attnPreWarps
}

// Mamba2 limits of the kernels (CONV_MAXK, SCAN_MAXN).
const (
	mambaMaxConv  = 16
	mambaMaxState = 256
	// mambaStepRows bounds the head dim mamba_step takes (8 warps × 8 rows).
	mambaStepRows = 64
)

// ssdChunk is mamba_ssd_pre's chunk of positions (SSD_L in
// kernels/mamba2.cu).
const ssdChunk = 16

// useSSD reports whether the chunked scan (mamba_ssd_cb, then
// mamba_ssd_pre_cb_n64 or _n128) takes a prefill of head dim P and d_state
// n (SSD_PB in kernels/mamba2.cu); other shapes take the sequential scan.
func useSSD(P, n int) bool { return P%32 == 0 && (n == 64 || n == 128) }

// scanPreKernel is the prefill scan compiled for d_state n: the fewest
// slots per lane (mamba_scan_pre_nS, S·32 ≥ n) of S ∈ {1, 2, 4, 8}.
func scanPreKernel(n int) string {
	s := 1
	for s*32 < n {
		s *= 2
	}
	return fmt.Sprintf("mamba_scan_pre_n%d", s)
}

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
		th, v4 := rowThreads(Di/G, 4)
		v4 = v4 && Di%4 == 0 && E%4 == 0
		roll := nullPtr
		var xbc *tensor // the conv's output, where it is not kept in shared memory
		switch {
		case T == 1 && v4 && P <= mambaStepRows: // decode: conv and scan in one kernel
			b.launch(b.mambaStepKernel(N), [3]int{B * H, 1, 1}, block256, in.ptr(), b.asF32(cw).ptr(), b.asF32(cb).ptr(),
				cst.ptr(), b.asF32(dtb).ptr(), b.asF32(alog).ptr(), b.asF32(dd).ptr(), sst.ptr(), y.ptr(), E, Di, C, H, P, N, G, Kc,
				stateEarly)
			roll = cst.ptr()
		case T == 1: // decode, shapes mamba_step does not take: the conv, then the scan
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
			if useSSD(P, N) { // the chunked scan, C·Bᵀ of every chunk computed once per group
				chunks := (T + ssdChunk - 1) / ssdChunk
				cbt := b.newTensor(compute.F32, B*G*chunks*ssdChunk*ssdChunk)
				b.launch(b.k["mamba_ssd_cb"], [3]int{B * G * chunks, 1, 1}, block256, xbc.ptr(), cbt.ptr(), T, Di, C, N, G)
				b.launch(b.k[fmt.Sprintf("mamba_ssd_pre_cb_n%d", N)], [3]int{B * H * P / 32, 1, 1}, block256, dt.ptr(), xbc.ptr(),
					b.asF32(alog).ptr(), b.asF32(dd).ptr(), cbt.ptr(), sst.ptr(), y.ptr(), T, Di, C, H, P, N, G)
				cbt.h.release()
			} else { // the sequential scan
				b.launch(b.k[scanPreKernel(N)], [3]int{B * H, (P + 7) / 8, 1}, block256, dt.ptr(), xbc.ptr(),
					b.asF32(dd).ptr(), sst.ptr(), y.ptr(), T, Di, C, H, P, N, G)
			}
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

// stateEarly is mamba_step's and mamba_step_gated's early argument: 1,
// each block requests its state rows before it waits for its predecessor
// (the projection), so they arrive while it waits.
const stateEarly int32 = 1

// mambaStepKernel returns the mamba_step variant for d_state n: four
// state slots a lane up to 128, else eight.
func (b *Backend) mambaStepKernel(n int) *kernel {
	if n <= 128 {
		return b.k["mamba_step_n128"]
	}
	return b.k["mamba_step"]
}

// mambaStepGated returns the mamba_step_gated variant for d_state n and
// how many blocks it spreads a head of P rows over (64 rows a block, as
// mamba_run's scan takes them).
func (b *Backend) mambaStepGated(P, n int) (*kernel, int) {
	k := b.k["mamba_step_gated_n256"]
	if n <= 128 { // four state slots per lane
		k = b.k["mamba_step_gated_n128"]
	}
	return k, (P + 63) / 64
}

// Mamba2Block (compute.Mamba2Block) runs a decode step's Mamba2 mixer (an
// utterance's CFG pair or a batch's pairs, one position) in three kernels
// instead of four on Hopper:
// in_proj as the chunk GEMV whose epilogue also runs the conv and rolls
// its state (gemv_chunk_conv), the scan gating its output and summing its
// squares per head (mamba_step_gated), and out_proj as the chunk GEMV that
// applies the gated RMSNorm as it loads its input (gemv_chunk_norm). Each
// row is computed as mamba_run computes a lone utterance's, so a batch's
// Mamba2 layers give every utterance the bits it would get alone. It
// declines (ok false) for prefill, more than one norm group, and shapes
// the chunk GEMV or mamba_step do not take.
func (b *Backend) Mamba2Block(x, inProj, outProj compute.Tensor, w compute.Mamba2Weights, convState, ssmState compute.Tensor, s compute.Mamba2Spec) (compute.Tensor, bool) {
	if !b.fusedMamba {
		return nil, false
	}
	xt, wi, wo := f32Of(x, "Mamba2Block"), cast(inProj), cast(outProj)
	Di, H, P, N, G, Kc := s.DInner, s.Heads, s.HeadDim, s.DState, s.Groups, s.DConv
	C := Di + 2*G*N
	E := 2*Di + 2*G*N + H
	if len(xt.shape) != 3 || xt.shape[1] != 1 || len(wi.shape) != 2 || len(wo.shape) != 2 ||
		wi.dt != compute.BF16 || wo.dt != compute.BF16 {
		return nil, false
	}
	B, D := xt.shape[0], xt.shape[2]
	if wi.shape[0] != E || wi.shape[1] != D || wo.shape[1] != Di || gemvKT(D) == 0 || gemvKT(Di) == 0 ||
		G != 1 || H*P != Di || P > mambaStepRows || N > mambaMaxState || Kc < 1 || Kc > mambaMaxConv || B == 0 {
		return nil, false
	}
	cst, sst := f32Of(convState, "Mamba2Block"), f32Of(ssmState, "Mamba2Block")
	cw, cb, dtb, alog, dd, nw := cast(w.ConvWeight), cast(w.ConvBias), cast(w.DtBias), cast(w.ALog), cast(w.D), cast(w.NormWeight)
	if cst.n() != B*C*Kc || sst.n() != B*H*P*N || cw.n() != C*Kc || cb.n() != C || dtb.n() != H || alog.n() != H || dd.n() != H || nw.n() != Di {
		panic(fmt.Sprintf("gpu.Mamba2Block: state or weight sizes for spec %+v", s))
	}
	Dm := wo.shape[0]
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, B, 1, Dm)
		zx := b.newTensor(compute.F32, B, E)
		xbc := b.newTensor(compute.F32, B, C)
		b.launchChunk(gemvChunkConvKernel, xt.ptr(), wi.ptr(), nullPtr, zx.ptr(), B, E, D, gemvChunkEarly,
			b.asF32(cw).ptr(), b.asF32(cb).ptr(), cst.ptr(), xbc.ptr(), int32(Di), int32(C), int32(Kc))
		yg := b.newTensor(compute.F32, B, Di)
		k, splits := b.mambaStepGated(P, N)
		part := b.newTensor(compute.F32, B, H*splits, 2) // doubles, one per block
		b.launch(k, [3]int{B * H * splits, 1, 1}, block256, zx.ptr(), xbc.ptr(), b.asF32(dtb).ptr(),
			b.asF32(alog).ptr(), b.asF32(dd).ptr(), sst.ptr(), yg.ptr(), part.ptr(), E, Di, C, H, P, N, G, stateEarly)
		b.launchChunk(gemvChunkNormKernel, yg.ptr(), wo.ptr(), nullPtr, out.ptr(), B, Dm, Di, gemvChunkEarly,
			part.ptr(), int32(H*splits), b.asF32(nw).ptr(), s.Eps)
		for _, t := range []*tensor{zx, xbc, yg, part} {
			t.h.release()
		}
	})
	return out, true
}
