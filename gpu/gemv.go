//go:build cuda

package gpu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"gorgonia.org/cu"
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
	kernel string // a key of gemvKernels
	rows   int    // R
	ks     int    // 1, 2, 4 or 8
}

// gemvKernel is a compiled variant's shape: R output rows per warp
// group and ST weight stages in flight per lane (each stage 16·R·U KiB
// per block; R·U = 4 in every variant).
type gemvKernel struct{ rows, stages int }

// gemvKernels are the compiled variants.
var gemvKernels = map[string]gemvKernel{
	"gemv_m2_r1u4": {1, 2}, "gemv_m2_r2u2": {2, 2}, "gemv_m2_r4u1": {4, 2},
	"gemv_m2_r4u1s3": {4, 3}, "gemv_m2_r4u1s4": {4, 4}, "gemv_m2_r4u1s6": {4, 6},
	"gemv_m8_r4u1": {4, 2},
}

// gemvStageBytes is one weight stage of a block: 8 warps × 32 lanes ×
// R·U copies of 16 bytes.
const gemvStageBytes = 8 * 32 * 4 * 16

// gemvSmem is the dynamic shared memory of a GEMV variant.
func gemvSmem(kernel string) int { return gemvKernels[kernel].stages * gemvStageBytes }

// gemvBatchRows bounds the rows Linear gives the GEMV. Batch step on the
// H200 (2026-11-29, zonos bench): 8 rows 5.26 ms with gemv_m8 vs 6.54 ms
// with linear_gemv; 32 rows 9.57 ms with tc_gemm (tc_wide's predecessor;
// tc_wide: 8.33 ms, docs/gpu/2026-11-29-ring) vs 20.6 ms with a 16-row
// GEMV variant.
const gemvBatchRows = 8

func (p gemvPlan) rowsPerBlock() int { return 8 / p.ks * p.rows }

func (p gemvPlan) String() string { return fmt.Sprintf("%s/ks%d", p.kernel, p.ks) }

var (
	// gemvEarly: how many weight stages the GEMV requests before waiting
	// for the previous kernel (all by default; ZONOS_GEMV_EARLY=n for
	// measurements, 0 waits first).
	gemvEarly = gemvEarlyStages()
	// gemvStages fixes the stages of the decode step's GEMV (2, 3, 4 or
	// 6; ZONOS_GEMV_STAGES, for measurements); 0 lets gemvPlanFor choose.
	gemvStages   = envInt("ZONOS_GEMV_STAGES", 0)
	gemvOld      = os.Getenv("ZONOS_GEMV") == "old"
	gemvFileOnce sync.Once
	gemvFile     map[[2]int]gemvPlan
)

// gemvEarlyStages reads ZONOS_GEMV_EARLY: a count of stages (0 included),
// else all of them.
func gemvEarlyStages() int {
	if v, err := strconv.Atoi(os.Getenv("ZONOS_GEMV_EARLY")); err == nil && v >= 0 {
		return v
	}
	return 1 << 20
}

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
			v, ok := gemvKernels[fs[2]]
			if e1 != nil || e2 != nil || e3 != nil || !ok || (ks != 1 && ks != 2 && ks != 4 && ks != 8) {
				fmt.Fprintf(os.Stderr, "gpu: ZONOS_GEMV_PLAN: ignoring line %q\n", sc.Text())
				continue
			}
			m[[2]int{n, k}] = gemvPlan{fs[2], v.rows, ks}
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

// r4u1Stages names the r4u1 variant with st stages.
func r4u1Stages(st int) string {
	if st == 2 {
		return "gemv_m2_r4u1"
	}
	return fmt.Sprintf("gemv_m2_r4u1s%d", st)
}

// deepest gives plan p (an r4u1 plan) the most weight stages that still
// keep its whole grid resident at once: every block then requests its
// stages while the previous kernel runs (the longer the early stream, the
// less of a row kernel's time the weight read waits for), and no block
// waits for a second wave. Blocks per SM come from the driver's occupancy
// calculator for each variant's shared memory.
func (b *Backend) deepest(p gemvPlan, n int) gemvPlan {
	if p.kernel != "gemv_m2_r4u1" {
		return p
	}
	if gemvStages != 0 {
		if _, ok := gemvKernels[r4u1Stages(gemvStages)]; ok {
			p.kernel = r4u1Stages(gemvStages)
		}
		return p
	}
	blocks := (n + p.rowsPerBlock() - 1) / p.rowsPerBlock()
	for _, st := range []int{6, 4, 3} {
		if b.gemvResident(r4u1Stages(st)) >= blocks {
			p.kernel = r4u1Stages(st)
			break
		}
	}
	return p
}

// gemvResident is how many blocks of a GEMV variant the GPU holds at
// once (cached per variant; 0 when the driver cannot say).
func (b *Backend) gemvResident(kernel string) int {
	if v, ok := b.gemvOcc[kernel]; ok {
		return v
	}
	per, err := b.k[kernel].fn.MaxActiveBlocksPerMultiProcessor(256, int64(gemvSmem(kernel)))
	if err != nil {
		per = 0
	}
	if b.gemvOcc == nil {
		b.gemvOcc = map[string]int{}
	}
	b.gemvOcc[kernel] = per * b.sms
	return per * b.sms
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
	return b.deepest(defaultGemvPlan(n, k, b.sms), n)
}

// useGemvM2 reports whether Linear takes the weight-read GEMV.
func useGemvM2(m, k int, w *tensor) bool {
	return !gemvOld && m >= 1 && m <= gemvBatchRows && w.dt == 1 /* BF16 */ && k%8 == 0 && k > 0
}

// gemvRows runs y[m, n] = x·wᵀ + bias for m ≤ gemvBatchRows (owner
// goroutine): the M = 2 plan, else gemv_m8.
func (b *Backend) gemvRows(x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	if m <= 2 {
		b.gemvM2(b.gemvPlanFor(n, k), x, w, bias, y, m, n, k)
		return
	}
	b.gemvM2(splitPlan(gemvPlan{kernel: "gemv_m8_r4u1", rows: 4, ks: 1}, n, k, b.sms), x, w, bias, y, m, n, k)
}

// gemvM2 launches plan p: y[m, n] = x·wᵀ + bias (owner goroutine).
func (b *Backend) gemvM2(p gemvPlan, x, w *tensor, bias, y cu.DevicePtr, m, n, k int) {
	blocks := (n + p.rowsPerBlock() - 1) / p.rowsPerBlock()
	b.launchSmem(b.k[p.kernel], [3]int{blocks, 1, 1}, block256, gemvSmem(p.kernel), x.ptr(), w.ptr(), bias, y, int32(m), int32(n), int32(k), int32(p.ks), int32(gemvEarly))
}
