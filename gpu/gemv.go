//go:build cuda

package gpu

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
	"zonostream/gpu/kernels"
)

// The weight-read GEMV (gemv_m* in kernels/core.cu) serves Linear for
// M ≤ gemvBatchRows rows with BF16 weights and K % 8 == 0: every
// projection of the CFG decode step (M = 2: gemv_m2_*) and of a batch of
// up to 4 utterances (zonos.Batch, 2 rows each: gemv_m8). More rows take
// the tiled tensor-core GEMM (tc_wide), which measured faster at 32 rows. A plan names the kernel variant (R output rows per warp
// group, U copies per lane and stage) and KS, the warps that split K.
//
// Environment (for measurements; the defaults need none):
//
//	ZONOS_GEMV=old        use the previous kernel (linear_gemv) instead
//	ZONOS_GEMV_PLAN=file  per-shape plans, lines "N K kernel KS" (written
//	                      by TestGemvBandwidth with ZONOS_GEMV_PLAN_OUT)
type gemvPlan struct {
	kernel string // gemv_m2_r1u4, gemv_m2_r2u2 or gemv_m2_r4u1
	rows   int    // R
	ks     int    // 1, 2, 4 or 8
}

// gemvKernels are the compiled variants and their R.
var gemvKernels = map[string]int{"gemv_m2_r1u4": 1, "gemv_m2_r2u2": 2, "gemv_m2_r4u1": 4, "gemv_m8_r4u1": 4}

// gemvBatchRows bounds the rows Linear gives the GEMV. Batch step on the
// H200 (2026-11-29, zonos bench): 8 rows 5.26 ms with gemv_m8 vs 6.54 ms
// with linear_gemv; 32 rows 9.57 ms with tc_gemm (tc_wide's predecessor;
// tc_wide: 8.33 ms, docs/gpu/2026-11-29-ring) vs 20.6 ms with a 16-row
// GEMV variant.
const gemvBatchRows = 8

func (p gemvPlan) rowsPerBlock() int { return 8 / p.ks * p.rows }

func (p gemvPlan) String() string { return fmt.Sprintf("%s/ks%d", p.kernel, p.ks) }

var (
	// gemvEarly: the GEMV requests its first weight stage before waiting
	// for the previous kernel (ZONOS_GEMV_EARLY=0 turns it off).
	gemvEarly    = os.Getenv("ZONOS_GEMV_EARLY") != "0"
	gemvOld      = os.Getenv("ZONOS_GEMV") == "old"
	gemvFileOnce sync.Once
	gemvFile     map[[2]int]gemvPlan
)

// loadGemvPlans reads ZONOS_GEMV_PLAN once; a malformed file is ignored
// with a message on stderr (the defaults are always correct).
func loadGemvPlans() map[[2]int]gemvPlan {
	gemvFileOnce.Do(func() {
		path := os.Getenv("ZONOS_GEMV_PLAN")
		if path == "" {
			return
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gpu: ZONOS_GEMV_PLAN:", err)
			return
		}
		defer f.Close()
		m := map[[2]int]gemvPlan{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) != 4 || strings.HasPrefix(fs[0], "#") {
				continue
			}
			n, e1 := strconv.Atoi(fs[0])
			k, e2 := strconv.Atoi(fs[1])
			ks, e3 := strconv.Atoi(fs[3])
			r, ok := gemvKernels[fs[2]]
			if e1 != nil || e2 != nil || e3 != nil || !ok || (ks != 1 && ks != 2 && ks != 4 && ks != 8) {
				fmt.Fprintf(os.Stderr, "gpu: ZONOS_GEMV_PLAN: ignoring line %q\n", sc.Text())
				continue
			}
			m[[2]int{n, k}] = gemvPlan{fs[2], r, ks}
		}
		gemvFile = m
		fmt.Fprintf(os.Stderr, "gpu: %d GEMV plans from %s\n", len(m), path)
	})
	return gemvFile
}

// defaultGemvPlan: four rows per warp group (activation reuse), and K
// split over as few warps as still give the grid about 1.4 blocks per SM.
// On the H200 (2026-11-29, TestGemvBandwidth) this is the best of the 12
// variants at every decode shape: r4u1 with KS 1 for N ≥ 8512, KS 2 for
// N = 3072, KS 4 for N = 2048.
func defaultGemvPlan(n, k, sms int) gemvPlan {
	return splitPlan(gemvPlan{kernel: "gemv_m2_r4u1", rows: 4, ks: 1}, n, k, sms)
}

// splitPlan sets p's KS by defaultGemvPlan's rule.
func splitPlan(p gemvPlan, n, k, sms int) gemvPlan {
	for p.ks < 8 && 5*((n+p.rowsPerBlock()-1)/p.rowsPerBlock()) < 7*sms && (k/8)/(2*p.ks) >= 32 {
		p.ks *= 2
	}
	return p
}

// gemvPlanFor picks the plan for an N×K weight.
func (b *Backend) gemvPlanFor(n, k int) gemvPlan {
	if p, ok := loadGemvPlans()[[2]int{n, k}]; ok {
		return p
	}
	return defaultGemvPlan(n, k, b.sms)
}

// useGemvM2 reports whether Linear takes the weight-read GEMV.
func useGemvM2(m, k int, w *tensor) bool {
	return !gemvOld && m >= 1 && m <= gemvBatchRows && w.dt == 1 /* BF16 */ && k%8 == 0 && k > 0
}

// gemvRows runs y[m, n] = x·wᵀ + bias for m ≤ gemvBatchRows (owner
// goroutine): the chunk GEMV where it applies, else the M = 2 plan,
// else gemv_m8.
func (b *Backend) gemvRows(x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	if m <= 2 && b.useGemvChunk(k) {
		b.gemvChunk(x, w, bias, y, m, n, k, gemvChunkEarly)
		return
	}
	if m <= 2 {
		b.gemvM2(b.gemvPlanFor(n, k), x, w, bias, y, m, n, k)
		return
	}
	b.gemvM2(splitPlan(gemvPlan{kernel: "gemv_m8_r4u1", rows: 4, ks: 1}, n, k, b.sms), x, w, bias, y, m, n, k)
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
// M ≤ 2 and K = 2048, 4096 or 8192 (every decode projection): one block per
// 64 KiB of whole weight rows (kernels.GemvPlainPieces; 32 KiB for the
// gated and Mamba2 variants, GemvChunkPieces), requested with one
// cp.async.bulk before the block waits for its predecessor. Same run, H200
// (docs/gpu/2026-11-30-session12): GEMV-only decode step 1.009 vs 1.230 ms
// for the cp.async plans, step graph 1.752 vs 1.789 ms; 64 KiB against 32
// KiB chunks (docs/gpu/2026-11-30-session25, runs 3, 4 and 6): step graph
// 1.356–1.361 vs 1.363–1.367 ms (hybrid), 1.317 vs 1.335 ms (transformer).
//
// Environment (for measurements; the defaults need none):
//
//	ZONOS_GEMV_CHUNK=0        the cp.async plans instead
//	ZONOS_GEMV_CHUNK_EARLY=0  request the chunk after the wait
var (
	gemvChunkOff   = os.Getenv("ZONOS_GEMV_CHUNK") == "0"
	gemvChunkEarly = os.Getenv("ZONOS_GEMV_CHUNK_EARLY") != "0"
)

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
	return b.hopper && !gemvChunkOff && gemvKT(k) != 0
}

// gemvChunkKernel and gemvChunkNormKernel name the chunk GEMV's variants
// by gemvKT (no string built per launch).
var (
	gemvChunkKernel     = [5]string{1: "gemv_chunk_k1", 2: "gemv_chunk_k2", 4: "gemv_chunk_k4"}
	gemvChunkNormKernel = [5]string{1: "gemv_chunk_norm_k1", 2: "gemv_chunk_norm_k2", 4: "gemv_chunk_norm_k4"}
	gemvChunkConvKernel = [5]string{1: "gemv_chunk_conv_k1", 2: "gemv_chunk_conv_k2", 4: "gemv_chunk_conv_k4"}
)

// gemvGLUOff (ZONOS_GLU_FOLD=0, for measurements) declines LinearSwiGLU:
// the MLP's up-projection and its gate run as two kernels.
var gemvGLUOff = os.Getenv("ZONOS_GLU_FOLD") == "0"

// gemvChunkGLUKernel names the gated chunk GEMV (CHUNK_GLU) by gemvKT.
var gemvChunkGLUKernel = [5]string{1: "gemv_chunk_glu_k1", 2: "gemv_chunk_glu_k2", 4: "gemv_chunk_glu_k4"}

// LinearSwiGLU is compute.SwiGLULinear: on Hopper, for at most two rows
// and a BF16 weight the chunk GEMV serves, one gemv_chunk_glu launch whose
// blocks each multiply rows of both halves of w and gate them as they
// store (the decode step's MLP: one kernel fewer an attention layer).
func (b *Backend) LinearSwiGLU(x, w, bias compute.Tensor) (compute.Tensor, bool) {
	xt, wt := cast(x), cast(w)
	if gemvGLUOff || xt.dt != compute.F32 || wt.dt != compute.BF16 || len(wt.shape) != 2 || wt.shape[0]%2 != 0 || len(xt.shape) == 0 {
		return nil, false
	}
	n2, k := wt.shape[0], wt.shape[1]
	if xt.shape[len(xt.shape)-1] != k || !b.useGemvChunk(k) {
		return nil, false
	}
	m := xt.n() / k
	if m < 1 || m > 2 || n2 == 0 {
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
		half := kernels.GemvPlainPieces / gemvKT(k) / 2
		args := []any{xt.ptr(), wt.ptr(), bp, out.ptr(), int32(m), int32(n), int32(k), b2i(gemvChunkEarly)}
		b.launchSmem(b.k[gemvChunkGLUKernel[gemvKT(k)]], [3]int{(n + half - 1) / half, 1, 1}, block256, kernels.GemvPlainPieces*4096, args...)
	})
	return out, true
}

// gemvChunkRows is the weight rows one block of the Mamba2 block's fused
// chunk GEMVs (_conv, _norm) multiplies (gemvKT(k) ≠ 0).
func gemvChunkRows(k int) int { return kernels.GemvChunkPieces / gemvKT(k) }

// gemvChunk launches the chunk GEMV (owner goroutine; m ≤ 2, gemvKT(k) ≠ 0).
func (b *Backend) gemvChunk(x, w *tensor, bias, y cu.DevicePtr, m, n, k int, early bool) {
	b.launchChunk(gemvChunkKernel, kernels.GemvPlainPieces, x.ptr(), w.ptr(), bias, y, m, n, k, early)
}

// launchChunk launches the variant of a chunk GEMV kernel family for K
// (names by gemvKT) over N output rows, blocks of pieces 4 KiB pieces
// (kernels.GemvPlainPieces for the plain family, GemvChunkPieces for the
// fused ones): its grid, block and shared memory, and its leading
// arguments (x, w, bias, y, M, N, K, flags), then extra (owner goroutine).
func (b *Backend) launchChunk(family [5]string, pieces int, x, w, bias, y cu.DevicePtr, m, n, k int, early bool, extra ...any) {
	rows := pieces / gemvKT(k)
	args := append([]any{x, w, bias, y, int32(m), int32(n), int32(k), b2i(early)}, extra...)
	b.launchSmem(b.k[family[gemvKT(k)]], [3]int{(n + rows - 1) / rows, 1, 1}, block256, pieces*4096, args...)
}

// The tensor-core GEMV (gemv_tc_m* in kernels/gemvtc.cu, Hopper only)
// serves Linear for a batch's 3 to 32 rows (2 to 16 utterances) with a
// BF16 weight and K % 256 == 0: blocks of 64 weight rows × 512 k (256
// where 512 does not divide K), one bulk copy a row requested before the
// wait for the predecessor, m16n8k16 BF16 products of the activation's
// BF16 parts, and the splits added by tc_reduce_rows in split order. Up
// to 16 rows it multiplies three parts (about 24 bits of x); 17 to 32
// rows two (about 16 bits, as tc_wbf, which served them before), whose
// smaller shared memory lets an SM hold more blocks. It replaces gemv_m8
// (8 rows) and tc_wbf (more), which read the weights at 0.65–1.06 TB/s in
// the batched step (docs/gpu/2026-11-30-session26, run 1). Same runs,
// batch step with gemv_m8/tc_wbf → gemv_tc: batch 4 4.74–4.76 → 2.73–2.86
// ms (run 3); batch 16 6.76–6.79 → 6.61–6.81 ms with three parts (run 3),
// and 6.58–6.64 → 6.35–6.37 ms with two (run 6). Measured and dropped
// (run 4): the last block of each column tile adding the splits (tickets,
// no tc_reduce_rows): batch 4 2.94–2.96 against 2.74 ms, batch 16
// 7.59–7.66 against 6.81 ms.
//
// Environment (for measurements; the defaults need none):
//
//	ZONOS_GEMV_TC=0       batches to gemv_m8 and tc_wbf instead
//	ZONOS_GEMV_TC_KR=256  blocks of 64 rows × 256 k (twice the splits)
//	ZONOS_GEMV_TC_M32=p3  17–32 rows multiply three parts too
//	ZONOS_GEMV_TC_ROWS=64  17–32 rows (two parts) in blocks of 64 weight rows, not 128
var (
	gemvTCRows128 = os.Getenv("ZONOS_GEMV_TC_ROWS") != "64"
	gemvTCOff     = os.Getenv("ZONOS_GEMV_TC") == "0"
	gemvTCM32P2   = os.Getenv("ZONOS_GEMV_TC_M32") != "p3"
	gemvTCSlice   = 512 // the k of a block's slice: 512, or 256 (ZONOS_GEMV_TC_KR=256)
)

func init() {
	if os.Getenv("ZONOS_GEMV_TC_KR") == "256" {
		gemvTCSlice = 256
	}
}

// gemvTCMaxRows is the most rows gemv_tc takes.
const gemvTCMaxRows = 32

// useGemvTC reports whether Linear gives m rows of a K-wide weight w to
// the tensor-core GEMV.
func (b *Backend) useGemvTC(m, k int, w *tensor) bool {
	return b.hopper && !gemvTCOff && m > 2 && m <= gemvTCMaxRows && w.dt == compute.BF16 && k > 0 && k%256 == 0
}

// gemvTCVariant is one compiled gemv_tc kernel: the batch rows it is
// built for (8, 16 or 32), its slice of k, the activation's parts and the
// weight rows a block multiplies.
type gemvTCVariant struct{ rows, kr, parts, block int }

// gemvTCKernels names every compiled variant (GEMV_TC in
// kernels/gemvtc.cu); launch.go gives each its shared memory.
var gemvTCKernels = map[gemvTCVariant]string{
	{8, 256, 3, 64}: "gemv_tc_m8", {16, 256, 3, 64}: "gemv_tc_m16", {32, 256, 3, 64}: "gemv_tc_m32",
	{8, 512, 3, 64}: "gemv_tc_m8_k512", {16, 512, 3, 64}: "gemv_tc_m16_k512", {32, 512, 3, 64}: "gemv_tc_m32_k512",
	{32, 256, 2, 64}: "gemv_tc_m32_p2", {32, 512, 2, 64}: "gemv_tc_m32_k512_p2",
	{32, 256, 2, 128}: "gemv_tc_m32_r128_p2", {32, 512, 2, 128}: "gemv_tc_m32_r128_k512_p2",
}

// gemvTCFor is the variant for m rows and slices of kr.
func gemvTCFor(m, kr int) gemvTCVariant {
	switch {
	case m <= 8:
		return gemvTCVariant{8, kr, 3, 64}
	case m <= 16:
		return gemvTCVariant{16, kr, 3, 64}
	case gemvTCM32P2 && gemvTCRows128:
		return gemvTCVariant{32, kr, 2, 128}
	case gemvTCM32P2:
		return gemvTCVariant{32, kr, 2, 64}
	}
	return gemvTCVariant{32, kr, 3, 64}
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
