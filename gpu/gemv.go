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
)

// The weight-read GEMV (gemv_m2_* in kernels/core.cu) serves Linear for
// M ≤ 2 rows with BF16 weights and K % 8 == 0: every projection of the CFG
// decode step. A plan names the kernel variant (R output rows per warp
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
var gemvKernels = map[string]int{"gemv_m2_r1u4": 1, "gemv_m2_r2u2": 2, "gemv_m2_r4u1": 4}

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
	p := gemvPlan{kernel: "gemv_m2_r4u1", rows: 4, ks: 1}
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
	return !gemvOld && m >= 1 && m <= 2 && w.dt == 1 /* BF16 */ && k%8 == 0 && k > 0
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

// gemvLNOff is ZONOS_GEMV_LN=0: pre-norms run as their own LayerNorm kernel
// before the projection (for before/after measurements and bisecting).
var gemvLNOff = os.Getenv("ZONOS_GEMV_LN") == "0"

// gemvLNMaxK is GEMV_LN_MAXK of kernels/core.cu: the longest rows the
// prologue normalises in shared memory.
const gemvLNMaxK = 2048

var _ compute.NormLinearer = (*Backend)(nil)

// AddLayerNormLinear is compute.NormLinearer for the decode step's shapes
// (M ≤ 2 rows of K ≤ 2048, K % 8 == 0, BF16 weight): the weight-read GEMV
// with the LayerNorm in its prologue (gemv_m2_*_ln), one kernel instead of
// two. Other shapes report ok = false.
func (b *Backend) AddLayerNormLinear(x, residual, nw, nb compute.Tensor, eps float32, w, bias compute.Tensor) (compute.Tensor, compute.Tensor, bool) {
	xt, wt := f32Of(x, "AddLayerNormLinear"), cast(w)
	if gemvLNOff || len(wt.shape) != 2 || len(xt.shape) == 0 {
		return nil, nil, false
	}
	n, k := wt.shape[0], wt.shape[1]
	m := xt.n() / max(k, 1)
	if xt.shape[len(xt.shape)-1] != k || !useGemvM2(m, k, wt) || k > gemvLNMaxK || k%4 != 0 {
		return nil, nil, false
	}
	var rt *tensor
	if residual != nil {
		if rt = f32Of(residual, "AddLayerNormLinear"); !slices.Equal(rt.shape, xt.shape) {
			panic(fmt.Sprintf("gpu.AddLayerNormLinear: %v + %v", xt.shape, rt.shape))
		}
	}
	wn := cast(nw)
	if wn.n() != k || (nb != nil && cast(nb).n() != k) {
		panic(fmt.Sprintf("gpu.AddLayerNormLinear: norm weight %v for rows of %d", wn.shape, k))
	}
	var bt *tensor
	if bias != nil {
		if bt = cast(bias); bt.n() != n {
			panic(fmt.Sprintf("gpu.AddLayerNormLinear: bias of %d for %d outputs", bt.n(), n))
		}
	}
	shape := append(slices.Clone(xt.shape[:len(xt.shape)-1]), n)
	var out, sum *tensor
	b.do(func() {
		out = b.newTensor(compute.F32, shape...)
		rp, sp, bp, nbp := nullPtr, nullPtr, nullPtr, nullPtr
		if rt != nil {
			sum = b.newTensor(compute.F32, xt.shape...)
			rp, sp = rt.ptr(), sum.ptr()
		}
		if bt != nil {
			bp = b.asF32(bt).ptr()
		}
		if nb != nil {
			nbp = b.asF32(cast(nb)).ptr()
		}
		p := b.gemvPlanFor(n, k)
		blocks := (n + p.rowsPerBlock() - 1) / p.rowsPerBlock()
		b.launch(b.k[p.kernel+"_ln"], [3]int{blocks, 1, 1}, block256, xt.ptr(), wt.ptr(), bp, out.ptr(),
			int32(m), int32(n), int32(k), int32(p.ks), b2i(gemvEarly), rp, b.asF32(wn).ptr(), nbp, sp, eps)
	})
	if rt == nil {
		return out, b.Reshape(x, xt.shape...), true
	}
	return out, sum, true
}
