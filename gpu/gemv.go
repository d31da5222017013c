//go:build cuda

package gpu

import (
	"fmt"
	"slices"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// The weight-read GEMV (gemv_m2_r4u1 and gemv_m8_r4u1 in kernels/core.cu)
// serves Linear for up to gemvBatchRows rows with a BF16 weight and
// K % 8 == 0 where the Hopper GEMVs do not: on the generic plan every
// projection of the CFG decode step (M = 2) and of a batch of up to 4
// utterances (8 rows), on Hopper a decode step's projections whose K the
// chunk GEMV does not take. A warp group owns four output rows (the activation
// loaded once for four weight rows) and KS warps split K between them.
type gemvPlan struct {
	kernel string // gemv_m2_r4u1 (M ≤ 2) or gemv_m8_r4u1 (M ≤ 8)
	ks     int    // warps that split K: 1, 2, 4 or 8
}

// gemvGroupRows is the output rows of a warp group (the kernels' R).
const gemvGroupRows = 4

// gemvBatchRows bounds the rows Linear gives the weight-read GEMV: at 8
// rows it beat linear_gemv (H200, 2026-11-29, batch step 5.26 against
// 6.54 ms); more rows take the tiled GEMMs (a 16-row GEMV took 20.6 ms
// a batch step at 32 rows, the tiled tensor-core GEMM 8.33 ms).
const gemvBatchRows = 8

func (p gemvPlan) rowsPerBlock() int { return 8 / p.ks * gemvGroupRows }

func (p gemvPlan) String() string { return fmt.Sprintf("%s/ks%d", p.kernel, p.ks) }

// gemvEarly and gemvChunkEarly are the GEMV kernels' flag (bit 0) that
// requests the first weights before the wait for the previous kernel
// (programmatic dependent launch): a weight is never written while
// kernels run, so its copy may overlap the predecessor's tail.
const (
	gemvEarly      = true
	gemvChunkEarly = true
)

// gemvPlanFor is the plan of kernel (gemv_m2_r4u1 or gemv_m8_r4u1) for an
// N × K weight: K split over as few warps as still give the grid about
// 1.4 blocks per SM. On the H200 (2026-11-29) four rows a warp group was
// the fastest of one, two and four at every decode shape, with this KS:
// 1 for N ≥ 8512, 2 for N = 3072, 4 for N = 2048.
func gemvPlanFor(kernel string, n, k, sms int) gemvPlan {
	p := gemvPlan{kernel: kernel, ks: 1}
	for p.ks < 8 && 5*((n+p.rowsPerBlock()-1)/p.rowsPerBlock()) < 7*sms && (k/8)/(2*p.ks) >= 32 {
		p.ks *= 2
	}
	return p
}

// useGemvM2 reports whether Linear takes the weight-read GEMV.
func useGemvM2(m, k int, w *tensor) bool {
	return m >= 1 && m <= gemvBatchRows && w.dt == compute.BF16 && k%8 == 0 && k > 0
}

// gemvRows runs y[m, n] = x·wᵀ + bias for m ≤ gemvBatchRows (owner
// goroutine): gemv_m2 for up to two rows, else gemv_m8.
func (b *Backend) gemvRows(x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	kernel := "gemv_m8_r4u1"
	if m <= 2 {
		kernel = "gemv_m2_r4u1"
	}
	b.gemvM2(gemvPlanFor(kernel, n, k, b.sms), x, w, bias, y, m, n, k)
}

// b2i is a kernel's int flag.
func b2i(v bool) int32 {
	if v {
		return 1
	}
	return 0
}

// gemvM2 launches plan p: y[m, n] = x·wᵀ + bias (owner goroutine).
func (b *Backend) gemvM2(p gemvPlan, x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	blocks := (n + p.rowsPerBlock() - 1) / p.rowsPerBlock()
	b.launch(b.k[p.kernel], [3]int{blocks, 1, 1}, block256, x.ptr(), w.ptr(), bias, y, int32(m), int32(n), int32(k), int32(p.ks), b2i(gemvEarly))
}

// The chunk GEMV (gemv_chunk_k* in kernels/gemv.cu, Hopper only) serves
// a decode step's rows (stepRows) and K = 2048, 4096 or 8192 (every decode
// projection): for one utterance one block per 64 KiB of whole weight rows (kernels.GemvPlainPieces; 32 KiB for the
// fused Mamba2 variants, GemvChunkPieces; a batch's 128 KiB,
// GemvBatchPieces), requested with one
// cp.async.bulk before the block waits for its predecessor. Measured on an
// H200 (2026-11-30, same runs): a GEMV-only decode step took 1.009 ms
// against 1.230 ms on gemv_m2, the step graph 1.752 against 1.789 ms; 64
// KiB chunks against 32 KiB: step graph 1.356–1.361 against 1.363–1.367
// ms (hybrid), 1.317 against 1.335 ms (transformer).

// gemvKT is K/2048 for the K the chunk GEMV serves, else 0.
func gemvKT(k int) int {
	switch k {
	case 2048, 4096, 8192:
		return k / 2048
	}
	return 0
}

// useGemvChunk reports whether the chunk GEMV serves a K-wide weight on this
// device (Hopper loads the sm_90 module, where it is compiled).
func (b *Backend) useGemvChunk(k int) bool {
	return b.chunkGemv && gemvKT(k) != 0
}

// stepRows reports whether the chunk GEMV family takes x's m rows: one
// utterance's CFG pair (m ≤ 2), or any number of rows of one position
// each ([rows, 1, K], a batch's decode step). A batched decode step thus
// runs every projection on the kernels the lone step runs, with the same
// arithmetic per row (gemv.cu), so an utterance's logits do not depend on
// the batch it is in, nor on whether it is in one.
func stepRows(x *tensor, m int) bool {
	s := x.shape
	return m >= 1 && (m <= 2 || (len(s) == 3 && s[1] == 1))
}

// chunkFamily names a chunk GEMV kernel family's variants by gemvKT: the
// lone step's (its pieces a block: kernels.GemvPlainPieces or
// GemvChunkPieces) and a batch's (_rows, kernels.GemvBatchPieces); no
// string is built per launch.
type chunkFamily struct {
	one, batch [5]string
	pieces     int // the lone step's pieces a block
}

func newChunkFamily(base string, pieces int) chunkFamily {
	f := chunkFamily{pieces: pieces}
	for _, kt := range []int{1, 2, 4} {
		f.one[kt] = fmt.Sprintf("%s_k%d", base, kt)
		f.batch[kt] = f.one[kt] + "_rows"
	}
	return f
}

// variant is the kernel for m rows of a K-wide weight and its pieces a
// block.
func (f chunkFamily) variant(m, k int) (string, int) {
	if m > 2 {
		return f.batch[gemvKT(k)], kernels.GemvBatchPieces
	}
	return f.one[gemvKT(k)], f.pieces
}

// The chunk GEMV's families (kernels/gemv.cu): plain, with in_proj's conv
// epilogue, with out_proj's gated norm on load, and gated (CHUNK_GLU).
var (
	gemvChunkKernel     = newChunkFamily("gemv_chunk", kernels.GemvPlainPieces)
	gemvChunkConvKernel = newChunkFamily("gemv_chunk_conv", kernels.GemvChunkPieces)
	gemvChunkNormKernel = newChunkFamily("gemv_chunk_norm", kernels.GemvChunkPieces)
	gemvChunkGLUKernel  = newChunkFamily("gemv_chunk_glu", kernels.GemvPlainPieces)
)

// chunkGroups is a chunk GEMV's grid x for m rows: blocks of
// kernels.GemvPairs pairs of rows.
func chunkGroups(m int) int {
	per := 2 * kernels.GemvPairs
	return max(1, (m+per-1)/per)
}

// LinearSwiGLU is compute.SwiGLULinear: on Hopper, for a decode step's
// rows (stepRows) and a BF16 weight the chunk GEMV serves, one gemv_chunk_glu launch whose
// blocks each multiply rows of both halves of w and gate them as they
// store (the decode step's MLP: one kernel fewer an attention layer).
func (b *Backend) LinearSwiGLU(x, w, bias compute.Tensor) (compute.Tensor, bool) {
	xt, wt := cast(x), cast(w)
	if xt.dt != compute.F32 || wt.dt != compute.BF16 || len(wt.shape) != 2 || wt.shape[0]%2 != 0 || len(xt.shape) == 0 {
		return nil, false
	}
	n2, k := wt.shape[0], wt.shape[1]
	if xt.shape[len(xt.shape)-1] != k || !b.useGemvChunk(k) {
		return nil, false
	}
	m := xt.n() / k
	if !stepRows(xt, m) || n2 == 0 {
		return nil, false
	}
	var bt *tensor
	if bias != nil {
		if bt = cast(bias); bt.n() != n2 {
			panic(fmt.Sprintf("gpu.LinearSwiGLU: bias of %d for %d outputs", bt.n(), n2))
		}
	}
	n := n2 / 2
	shape := append(slices.Clone(xt.shape[:len(xt.shape)-1]), n)
	var out *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		bp := nullPtr
		if bt != nil {
			bp = b.asF32(bt).ptr()
		}
		name, pieces := gemvChunkGLUKernel.variant(m, k)
		half := pieces / gemvKT(k) / 2
		args := []any{xt.ptr(), wt.ptr(), bp, out.ptr(), int32(m), int32(n), int32(k), b2i(gemvChunkEarly)}
		b.launchSmem(b.k[name], [3]int{chunkGroups(m), (n + half - 1) / half, 1}, block256, pieces*4096, args...)
	})
	return out, true
}

// gemvChunk launches the chunk GEMV (owner goroutine; gemvKT(k) ≠ 0).
func (b *Backend) gemvChunk(x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	b.launchChunk(gemvChunkKernel, x.ptr(), w.ptr(), bias, y, m, n, k, gemvChunkEarly)
}

// launchChunk launches the variant of a chunk GEMV kernel family for M
// and K (chunkFamily.variant) over N output rows: its grid, block and
// shared memory, and its leading arguments (x, w, bias, y, M, N, K,
// flags), then extra (owner goroutine).
func (b *Backend) launchChunk(family chunkFamily, x, w, bias, y cu.DevicePtr, m, n, k int, early bool, extra ...any) {
	name, pieces := family.variant(m, k)
	rows := pieces / gemvKT(k)
	args := append([]any{x, w, bias, y, int32(m), int32(n), int32(k), b2i(early)}, extra...)
	b.launchSmem(b.k[name], [3]int{chunkGroups(m), (n + rows - 1) / rows, 1}, block256, pieces*4096, args...)
}

// The tensor-core GEMV (gemv_tc_m* in kernels/gemvtc.cu, Hopper only)
// serves Linear for a batch's 3 to 32 rows (2 to 16 utterances) with a
// BF16 weight and K % 256 == 0: blocks of weight rows × gemvTCSlice k (256
// where that does not divide K), one bulk copy a row requested before the
// wait for the predecessor, m16n8k16 BF16 products of the activation's
// BF16 parts, and the splits added by tc_reduce_rows in split order. Up
// to 16 rows it multiplies three parts (about 24 bits of x) in blocks of
// 64 weight rows; 17 to 32 rows two (about 16 bits, as tc_wbf) in blocks
// of 128 (kernels/gemvtc.cu says why). Measured on an H200 (2026-11-30),
// batch step on gemv_m8 / tc_wbf against gemv_tc: batch 4 4.74–4.76
// against 2.73–2.86 ms, batch 16 6.76–6.79 against 6.61–6.81 ms with
// three parts at every row count (two parts at 128 rows are faster still:
// kernels/gemvtc.cu). Having
// the last block of each column tile add the splits instead of
// tc_reduce_rows was slower: batch 4 2.94–2.96 against 2.74 ms, batch 16
// 7.59–7.66 against 6.81 ms.

// gemvTCSlice is the k of a gemv_tc block's slice where it divides K: 512
// (64 KiB of weight at 64 rows), else 256.
const gemvTCSlice = 512

// gemvTCMaxRows is the most rows gemv_tc takes.
const gemvTCMaxRows = 32

// useGemvTC reports whether Linear gives m rows of a K-wide weight w to
// the tensor-core GEMV.
func (b *Backend) useGemvTC(m, k int, w *tensor) bool {
	return b.tcGemv && m > 2 && m <= gemvTCMaxRows && w.dt == compute.BF16 && k > 0 && k%256 == 0
}

// gemvTCVariant is one compiled gemv_tc kernel: the batch rows it is
// built for (8, 16 or 32), its slice of k, the activation's parts and the
// weight rows a block multiplies.
type gemvTCVariant struct{ rows, kr, parts, block int }

// gemvTCKernels names every compiled variant (GEMV_TC in
// kernels/gemvtc.cu); launch.go gives each its shared memory.
var gemvTCKernels = map[gemvTCVariant]string{
	{8, 256, 3, 64}: "gemv_tc_m8", {16, 256, 3, 64}: "gemv_tc_m16", {32, 256, 2, 128}: "gemv_tc_m32_r128_p2",
	{8, 512, 3, 64}: "gemv_tc_m8_k512", {16, 512, 3, 64}: "gemv_tc_m16_k512", {32, 512, 2, 128}: "gemv_tc_m32_r128_k512_p2",
}

// gemvTCFor is the variant for m rows and slices of kr.
func gemvTCFor(m, kr int) gemvTCVariant {
	switch {
	case m <= 8:
		return gemvTCVariant{8, kr, 3, 64}
	case m <= 16:
		return gemvTCVariant{16, kr, 3, 64}
	}
	return gemvTCVariant{32, kr, 2, 128}
}

// smem is the variant's dynamic shared memory: the weight slice and the
// activation's BF16 planes (its parts of them), kr + 8 halfwords a row.
func (v gemvTCVariant) smem() int { return (v.block + v.parts*v.rows) * (v.kr + 8) * 2 }

// gemvTC launches the tensor-core GEMV, y[m, n] = x·wᵀ + bias, over
// slices of gemvTCSlice k where it divides K (else 256), and
// tc_reduce_rows after it to add the splits (owner goroutine; useGemvTC
// holds).
func (b *Backend) gemvTC(x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	kr := gemvTCSlice
	if k%kr != 0 {
		kr = 256
	}
	v := gemvTCFor(m, kr)
	splits := k / kr
	work := nullPtr
	var wk *tensor
	if splits > 1 {
		wk = b.newTensor(compute.F32, splits*m*n)
		work = wk.ptr()
	}
	b.launchSmem(b.k[gemvTCKernels[v]], [3]int{(n + v.block - 1) / v.block, splits, 1}, block256, v.smem(),
		x.ptr(), w.ptr(), bias, y, work, int32(m), int32(n), int32(k), b2i(gemvEarly))
	if wk != nil {
		b.launch(b.k["tc_reduce_rows"], [3]int{(n + 255) / 256, m, 1}, block256,
			append([]any{work, bias, y, m * n, splits, tcLinear, n, 0}, convEpilogue{}.args()...)...)
		wk.h.release()
	}
}
