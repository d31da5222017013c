//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// gemvPlans lists gemv_m2's K splits (gemvPlanFor picks one by the shape
// and the GPU's SM count).
func gemvPlans() []gemvPlan {
	var ps []gemvPlan
	for _, ks := range []int{1, 2, 4, 8} {
		ps = append(ps, gemvPlan{"gemv_m2_r4u1", ks})
	}
	return ps
}

// gemvCase is one GEMV shape's random operands (BF16 weight) and its
// float64 references without and with the bias.
type gemvCase struct {
	m, n, k   int
	x, w, b   *tensor
	ref, refB []float32
}

func newGemvCase(t *testing.T, r *rand.Rand, m, n, k int) *gemvCase {
	w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(k)), n, k)
	xv, bv := randVals(r, m*k, 1), randVals(r, n, 0.1)
	wv := gb.ReadF32(w.g)
	c := &gemvCase{m: m, n: n, k: k, x: cast(gb.FromF32(xv, m, k)), w: cast(w.g), b: cast(gb.FromF32(bv, n)),
		ref: make([]float32, m*n), refB: make([]float32, m*n)}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float64
			for l := 0; l < k; l++ {
				acc += float64(xv[i*k+l]) * float64(wv[j*k+l])
			}
			c.ref[i*n+j] = float32(acc)
			c.refB[i*n+j] = float32(acc + float64(bv[j]))
		}
	}
	return c
}

// check runs launch (on the owner goroutine) into an output poisoned with
// NaN, so an unwritten element fails, and compares it with the reference.
func (c *gemvCase) check(t *testing.T, name string, withBias bool, launch func(bias, y cu.DevicePtr)) {
	t.Helper()
	c.checkTol(t, name, withBias, tol, launch)
}

// checkTol is check with tolerance tl (relative to the largest reference
// value, at least 1).
func (c *gemvCase) checkTol(t *testing.T, name string, withBias bool, tl float64, launch func(bias, y cu.DevicePtr)) {
	t.Helper()
	poison := make([]float32, c.m*c.n)
	for i := range poison {
		poison[i] = float32(math.NaN())
	}
	y := cast(gb.FromF32(poison, c.m, c.n))
	bp, want := nullPtr, c.ref
	if withBias {
		bp, want = c.b.ptr(), c.refB
	}
	gb.do(func() { launch(bp, y.ptr()) })
	checkVals(t, fmt.Sprintf("%s M%d N%d K%d bias %v", name, c.m, c.n, c.k, withBias), want, gb.ReadF32(y), tl)
}

// TestGemvM2 checks the weight-read GEMV at every K split against a
// float64 host product on random data: real decode shapes, ragged N, K
// slices that do not fill a batch, one and two rows, with and without
// bias; the output is poisoned first so an unwritten element fails.
func TestGemvM2(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(71, 72))
	shapes := []struct{ m, n, k int }{
		{2, 2048, 4096}, {2, 8512, 2048}, {1, 9234, 2048}, {2, 333, 2056}, {1, 37, 64}, {2, 5, 8}, {2, 2049, 8192},
	}
	for _, s := range shapes {
		c := newGemvCase(t, r, s.m, s.n, s.k)
		for _, p := range gemvPlans() {
			for _, withBias := range []bool{false, true} {
				c.check(t, fmt.Sprintf("gemv %v", p), withBias, func(bias, y cu.DevicePtr) { gb.gemvM2(p, c.x, c.w, bias, y, s.m, s.n, s.k) })
			}
		}
	}
	// Batch rows: gemv_m8 through gemvRows.
	for _, s := range []struct{ m, n, k int }{{3, 2048, 4096}, {8, 8512, 2048}, {6, 333, 2056}, {4, 2049, 1024}, {7, 37, 64}, {8, 9234, 512}} {
		c := newGemvCase(t, r, s.m, s.n, s.k)
		c.check(t, "gemv rows", true, func(bias, y cu.DevicePtr) { gb.gemvRows(c.x, c.w, bias, y, s.m, s.n, s.k) })
	}
	// Linear takes it for M ≤ 8 BF16; TestLinear covers it against
	// engine/compute/cpu too.
	if !useGemvM2(2, 2048, &tensor{dt: compute.BF16}) {
		t.Error("Linear does not take the weight-read GEMV for M=2 BF16")
	}
}

// TestGemvChunk checks the chunk GEMV against a float64 host product:
// every K it serves, N from one row to a ragged last block and more rows
// than the first wave of blocks holds, one and two rows, with and without
// bias. The output is poisoned first, so an unwritten element fails.
func TestGemvChunk(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("the chunk GEMV needs sm_90")
	}
	for _, kt := range []int{1, 2, 4} {
		name := fmt.Sprintf("gemv_chunk_k%d", kt)
		regs, _ := gb.k[name].fn.Attribute(cu.NumRegs)
		local, _ := gb.k[name].fn.Attribute(cu.LocalSizeBytes)
		t.Logf("%s: %d registers, %d bytes of local memory per thread", name, regs, local)
	}
	r := rand.New(rand.NewPCG(81, 82))
	shapes := []struct{ m, n, k int }{
		{2, 2048, 4096}, {2, 8512, 2048}, {1, 9234, 2048}, {2, 2049, 8192}, {2, 16384, 2048}, {1, 37, 2048}, {2, 1, 4096}, {2, 133, 8192}, {1, 3, 8192},
	}
	for _, s := range shapes {
		c := newGemvCase(t, r, s.m, s.n, s.k)
		for _, withBias := range []bool{false, true} {
			c.check(t, "gemv_chunk", withBias, func(bias, y cu.DevicePtr) { gb.gemvChunk(c.x, c.w, bias, y, s.m, s.n, s.k) })
		}
	}
	if !gb.useGemvChunk(4096) || gb.useGemvChunk(2056) {
		t.Errorf("useGemvChunk: K 4096 %v, K 2056 %v", gb.useGemvChunk(4096), gb.useGemvChunk(2056))
	}
}

// TestLinearSwiGLU checks the gated chunk GEMV against what it replaces,
// Linear then SwiGLU on the same backend, bit for bit: the MLP's real
// shape, ragged halves (a last block with fewer rows than it takes), one
// and two rows, with and without a bias; and that it declines what it does
// not serve.
func TestLinearSwiGLU(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("the gated chunk GEMV needs sm_90")
	}
	r := rand.New(rand.NewPCG(83, 84))
	for _, s := range []struct{ m, n2, k int }{{2, 16384, 2048}, {1, 16384, 2048}, {2, 2 * 1027, 2048}, {1, 2 * 3, 4096}, {2, 2 * 13, 8192}} {
		w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.k)), s.n2, s.k).g
		x := gb.FromF32(randVals(r, s.m*s.k, 1), s.m, 1, s.k)
		for _, bias := range []compute.Tensor{nil, gb.FromF32(randVals(r, s.n2, 0.1), s.n2)} {
			name := fmt.Sprintf("LinearSwiGLU M%d 2N%d K%d bias %v", s.m, s.n2, s.k, bias != nil)
			got, ok := gb.LinearSwiGLU(x, w, bias)
			if !ok {
				t.Fatalf("%s: declined", name)
			}
			want := gb.SwiGLU(gb.Linear(x, w, bias))
			if !slices.Equal(got.Shape(), want.Shape()) {
				t.Fatalf("%s: shape %v, want %v", name, got.Shape(), want.Shape())
			}
			g, wv := gb.ReadF32(got), gb.ReadF32(want)
			for i := range wv {
				if math.Float32bits(g[i]) != math.Float32bits(wv[i]) {
					t.Fatalf("%s: element %d is %g, Linear then SwiGLU gave %g", name, i, g[i], wv[i])
				}
			}
		}
	}
	w := randW(t, r, compute.BF16, 0.01, 64, 2048).g
	for _, x := range []compute.Tensor{gb.FromF32(randVals(r, 3*2048, 1), 3, 2048), gb.FromF32(randVals(r, 2*1024, 1), 2, 1024)} {
		if _, ok := gb.LinearSwiGLU(x, w, nil); ok {
			t.Errorf("LinearSwiGLU took x %v with weight %v", x.Shape(), w.Shape())
		}
	}
}

// TestGemvTC checks the tensor-core GEMV of a batch's rows against a
// float64 host product on random data: each variant (8, 16 and 32 rows)
// at the rows it is built for and fewer, decode shapes, a ragged last
// block, one split (no tc_reduce_rows) and many, slices of 512 k and of
// 256 (K not a multiple of 512), with and without bias. Three BF16 parts
// (up to 16 rows) keep about 24 bits of the activation, so those are held
// to a tenth of the backend's tolerance; two (17–32 rows), to the
// tolerance. The output is poisoned first, so an unwritten element fails.
func TestGemvTC(t *testing.T) {
	need(t)
	if !gb.hopper {
		t.Skip("the tensor-core GEMV needs sm_90")
	}
	var names []string
	for _, name := range gemvTCKernels {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		regs, _ := gb.k[name].fn.Attribute(cu.NumRegs)
		local, _ := gb.k[name].fn.Attribute(cu.LocalSizeBytes)
		t.Logf("%s: %d registers, %d bytes of local memory per thread", name, regs, local)
	}
	r := rand.New(rand.NewPCG(91, 92))
	shapes := []struct{ m, n, k int }{
		{8, 8512, 2048}, {3, 2048, 4096}, {6, 333, 256}, {16, 2049, 8192}, {11, 64, 512}, {32, 1000, 2048}, {17, 3072, 2048},
		{32, 129, 8192}, {5, 1, 768}, {13, 300, 768}, {32, 257, 1280}, {20, 64, 256},
	}
	ran := map[string]bool{}
	for _, s := range shapes {
		if !gb.useGemvTC(s.m, s.k, &tensor{dt: compute.BF16}) {
			t.Fatalf("M%d K%d: Linear does not take the tensor-core GEMV", s.m, s.k)
		}
		kr := gemvTCSlice
		if s.k%kr != 0 {
			kr = 256
		}
		v := gemvTCFor(s.m, kr)
		ran[gemvTCKernels[v]] = true
		tl := tol / 10 // three parts
		if v.parts == 2 {
			tl = tol
		}
		c := newGemvCase(t, r, s.m, s.n, s.k)
		for _, withBias := range []bool{false, true} {
			c.checkTol(t, gemvTCKernels[v], withBias, tl, func(bias, y cu.DevicePtr) {
				gb.gemvTC(c.x, c.w, bias, y, s.m, s.n, s.k)
			})
		}
	}
	for _, name := range names {
		if !ran[name] {
			t.Errorf("no shape ran %s", name)
		}
	}
}
