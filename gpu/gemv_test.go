//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gorgonia.org/cu"

	"zonostream/engine/compute"
)

// gemvPlans lists every variant the kernels provide.
func gemvPlans() []gemvPlan {
	var ps []gemvPlan
	for _, k := range []string{"gemv_m2_r1u4", "gemv_m2_r2u2", "gemv_m2_r4u1"} {
		for _, ks := range []int{1, 2, 4, 8} {
			ps = append(ps, gemvPlan{k, gemvKernels[k], ks})
		}
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

// TestGemvM2 checks every weight-read GEMV variant against a float64 host
// product on random data: real decode shapes, ragged N, K slices that do
// not fill a batch, one and two rows, with and without bias; the output is
// poisoned first so an unwritten element fails.
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
	// Linear takes the new path for M ≤ 8 BF16 (and the old one under
	// ZONOS_GEMV=old); TestLinear covers it against engine/cpu too.
	if !useGemvM2(2, 2048, &tensor{dt: compute.BF16}) && !gemvOld {
		t.Error("Linear does not take the weight-read GEMV for M=2 BF16")
	}
}

// TestGemvChunk checks the chunk GEMV against a float64 host product:
// every K it serves, N from one row to a ragged last block and more rows
// than the first wave of blocks holds, one and two rows, with and without
// bias, the chunk requested before and after the wait. The output is
// poisoned first, so an unwritten element fails.
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
		for i, early := range []bool{false, true} {
			for _, withBias := range []bool{i == 0, i == 1} {
				c.check(t, fmt.Sprintf("gemv_chunk early %v", early), withBias, func(bias, y cu.DevicePtr) { gb.gemvChunk(c.x, c.w, bias, y, s.m, s.n, s.k, early) })
			}
		}
	}
	if (!gb.useGemvChunk(4096) && !gemvChunkOff) || gb.useGemvChunk(2056) {
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
	if !gb.hopper || gemvGLUOff {
		t.Skip("the gated chunk GEMV needs sm_90 (and ZONOS_GLU_FOLD unset)")
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

// decodeShapes are the batch-2 projections of one hybrid decode step
// (N, K, how many per step): 34 Mamba2 layers, 12 attention layers, heads.
var decodeShapes = []struct {
	name       string
	n, k, each int
}{
	{"mamba in_proj", 8512, 2048, 34},
	{"mamba out_proj", 2048, 4096, 34},
	{"attn qkv", 3072, 2048, 12},
	{"attn out", 2048, 2048, 12},
	{"mlp fc1", 16384, 2048, 12},
	{"mlp fc2", 2048, 8192, 12},
	{"heads", 9234, 2048, 1},
}

// fillBF16 fills a device buffer of n bf16 values with pseudo-random
// values (owner goroutine) and waits for it: the GEMV starts reading its
// weight before it waits for the previous kernel (gemv_m2_body).
func (b *Backend) fillBF16(p cu.DevicePtr, n int, seed uint32) {
	b.launch(b.k["fill_bf16"], grid1(n), block256, p, n, int32(seed), float32(0.03))
	b.sync("fill_bf16")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestGemvBandwidth (ZONOS_GEMV_BENCH=1) times the old and every new GEMV
// variant at the decode shapes, M = 2, as bytes of weight read per second
// against the read and copy bandwidth measured in the same run, rotating
// over copies of each weight that together exceed the L2 cache. Then it
// times a GEMV-only decode step (all 117 projections on distinct weights,
// 3.25 GB) eagerly and as a replayed CUDA graph, old kernel vs new plans.
// With ZONOS_GEMV_PLAN_OUT it writes the best plan per shape there.
func TestGemvBandwidth(t *testing.T) {
	need(t)
	if os.Getenv("ZONOS_GEMV_BENCH") == "" {
		t.Skip("set ZONOS_GEMV_BENCH=1")
	}
	read := gb.ReadBandwidth(2 << 30)
	copyBW := gb.CopyBandwidth(2 << 30)
	t.Logf("read bandwidth %.0f GB/s, copy %.0f GB/s (read+write), %d SMs", read/1e9, copyBW/1e9, gb.sms)
	var planOut strings.Builder
	fmt.Fprintf(&planOut, "# best GEMV plan per decode shape, M=2, %s\n", gb.Device())
	var summary strings.Builder
	for _, s := range decodeShapes {
		bytes := s.n * s.k * 2
		copies := max(2, (320<<20)/bytes+1)
		ws := make([]*tensor, copies)
		for i := range ws {
			gb.do(func() {
				ws[i] = gb.newTensor(compute.BF16, s.n, s.k)
				gb.fillBF16(ws[i].ptr(), s.n*s.k, uint32(i*7919+s.n))
			})
		}
		x := cast(gb.FromF32(randVals(rand.New(rand.NewPCG(1, uint64(s.k))), 2*s.k, 1), 2, s.k))
		y := cast(gb.Zeros(2, s.n))
		timeIt := func(launch func(w *tensor)) float64 {
			var ds []time.Duration
			for rep := 0; rep < 5; rep++ {
				d := gb.Time(func() {
					gb.Run(func() {
						for i := 0; i < 3*copies; i++ {
							launch(ws[i%copies])
						}
					})
				})
				ds = append(ds, d/time.Duration(3*copies))
			}
			return float64(bytes) / median(ds).Seconds()
		}
		old := timeIt(func(w *tensor) {
			gb.launch(gb.k["linear_gemv"], [3]int{(s.n + 7) / 8, 1, 1}, block256, x.ptr(), w.ptr(), nullPtr, y.ptr(), 2, s.n, s.k, 1)
		})
		line := fmt.Sprintf("%-15s N%5d K%5d (%5.1f MB ×%d): old %6.0f GB/s (%4.1f %%)", s.name, s.n, s.k, float64(bytes)/1e6, copies, old/1e9, 100*old/read)
		best, bestBW := gemvPlan{}, 0.0
		var all []string
		for _, p := range gemvPlans() {
			bw := timeIt(func(w *tensor) { gb.gemvM2(p, x, w, nullPtr, y.ptr(), 2, s.n, s.k) })
			all = append(all, fmt.Sprintf("%v %.0f", p, bw/1e9))
			if bw > bestBW {
				best, bestBW = p, bw
			}
		}
		def := defaultGemvPlan(s.n, s.k, gb.sms)
		defBW := timeIt(func(w *tensor) { gb.gemvM2(def, x, w, nullPtr, y.ptr(), 2, s.n, s.k) })
		line += fmt.Sprintf(" | default %v %6.0f GB/s (%4.1f %%) | best %v %6.0f GB/s (%4.1f %%)", def, defBW/1e9, 100*defBW/read, best, bestBW/1e9, 100*bestBW/read)
		if gb.useGemvChunk(s.k) {
			for _, early := range []bool{false, true} {
				bw := timeIt(func(w *tensor) { gb.gemvChunk(x, w, nullPtr, y.ptr(), 2, s.n, s.k, early) })
				all = append(all, fmt.Sprintf("chunk/early %v %.0f", early, bw/1e9))
				line += fmt.Sprintf(" | chunk early %v %6.0f GB/s (%4.1f %%)", early, bw/1e9, 100*bw/read)
			}
		}
		t.Log(line)
		t.Logf("  all variants (GB/s): %s", strings.Join(all, ", "))
		fmt.Fprintln(&summary, line)
		fmt.Fprintf(&planOut, "%d %d %s %d\n", s.n, s.k, best.kernel, best.ks)
		for _, w := range ws {
			gb.Free(w)
		}
	}
	if p := os.Getenv("ZONOS_GEMV_PLAN_OUT"); p != "" {
		if err := os.WriteFile(p, []byte(planOut.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	fmt.Print("GEMV microbenchmark (M=2, bytes of weight per second; % of read bandwidth)\n" + summary.String())
	gemvStep(t, read)
}

// gemvStep times the 117 projections of one decode step on distinct
// weights (no other op), eager and as a graph, old vs new.
func gemvStep(t *testing.T, read float64) {
	type proj struct {
		w    *tensor
		x, y *tensor
		n, k int
	}
	var ps []proj
	total := 0
	xs, ys := map[int]*tensor{}, map[int]*tensor{}
	for _, s := range decodeShapes {
		if xs[s.k] == nil {
			xs[s.k] = cast(gb.FromF32(randVals(rand.New(rand.NewPCG(2, uint64(s.k))), 2*s.k, 1), 2, s.k))
		}
		if ys[s.n] == nil {
			ys[s.n] = cast(gb.Zeros(2, s.n))
		}
		for i := 0; i < s.each; i++ {
			var w *tensor
			gb.do(func() {
				w = gb.newTensor(compute.BF16, s.n, s.k)
				gb.fillBF16(w.ptr(), s.n*s.k, uint32(len(ps)*31+1))
			})
			ps = append(ps, proj{w, xs[s.k], ys[s.n], s.n, s.k})
			total += s.n * s.k * 2
		}
	}
	floor := float64(total) / read
	run := func(kind string) {
		for _, p := range ps {
			switch kind {
			case "old":
				gb.launch(gb.k["linear_gemv"], [3]int{(p.n + 7) / 8, 1, 1}, block256, p.x.ptr(), p.w.ptr(), nullPtr, p.y.ptr(), 2, p.n, p.k, 1)
			case "plan":
				gb.gemvM2(gb.gemvPlanFor(p.n, p.k), p.x, p.w, nullPtr, p.y.ptr(), 2, p.n, p.k)
			default: // what Linear runs (the bulk-copy GEMV on Hopper)
				gb.gemvRows(p.x, p.w, nullPtr, p.y.ptr(), 2, p.n, p.k)
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "GEMV-only decode step: %d projections, %.3f GB, floor %.3f ms at %.0f GB/s read\n", len(ps), float64(total)/1e9, floor*1e3, read/1e9)
	for _, name := range []string{"old", "plan", "linear"} {
		var eager []time.Duration
		for rep := 0; rep < 11; rep++ {
			eager = append(eager, gb.Time(func() { gb.Run(func() { run(name) }) }))
		}
		g, err := gb.Capture(func() { gb.Run(func() { run(name) }) })
		if err != nil {
			t.Fatal(err)
		}
		var graph []time.Duration
		for rep := 0; rep < 11; rep++ {
			graph = append(graph, gb.Time(func() {
				if err := g.Launch(); err != nil {
					t.Fatal(err)
				}
			}))
		}
		g.Destroy()
		e, gr := median(eager), median(graph)
		fmt.Fprintf(&out, "  %s kernel: eager %.3f ms (%.1f %% of floor), graph %.3f ms (%.1f %% of floor)\n",
			name, e.Seconds()*1e3, 100*floor/e.Seconds(), gr.Seconds()*1e3, 100*floor/gr.Seconds())
	}
	t.Log(out.String())
	fmt.Print(out.String())
	for _, p := range ps {
		gb.Free(p.w)
	}
}

// TestGemvTC checks the tensor-core GEMV of a batch's rows against a
// float64 host product on random data: each variant (8, 16 and 32 rows)
// at the rows it is built for and fewer, decode shapes, a ragged last
// block, one split (no tc_reduce_rows) and many, slices of 256 and 512 k,
// the weight requested before and after the wait, with and without bias.
// Its three BF16 parts keep about 24 bits of the activation, so it is
// held to a tenth of the backend's tolerance; with two (17–32 rows by
// default, in blocks of 64 or 128 weight rows), to the tolerance. The output is poisoned
// first, so an unwritten element fails.
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
		{32, 129, 8192}, {5, 1, 768},
	}
	saved, savedEarly, savedP2, savedR128 := gemvTCSlice, gemvEarly, gemvTCM32P2, gemvTCRows128
	defer func() { gemvTCSlice, gemvEarly, gemvTCM32P2, gemvTCRows128 = saved, savedEarly, savedP2, savedR128 }()
	for _, kr := range []int{256, 512} {
		gemvTCSlice = kr
		for _, s := range shapes {
			if s.k%kr != 0 {
				continue
			}
			if !gb.useGemvTC(s.m, s.k, &tensor{dt: compute.BF16}) {
				t.Fatalf("M%d K%d: Linear does not take the tensor-core GEMV", s.m, s.k)
			}
			c := newGemvCase(t, r, s.m, s.n, s.k)
			for i, early := range []bool{false, true} {
				for v, p2 := range []bool{false, true, true} {
					if p2 && s.m <= 16 {
						continue
					}
					r128 := v == 2
					gemvEarly, gemvTCM32P2, gemvTCRows128 = early, p2, r128
					tl := tol / 10 // three parts
					if p2 {
						tl = tol
					}
					name := fmt.Sprintf("gemv_tc k%d early %v two parts %v 128-row blocks %v", kr, early, p2, r128)
					c.checkTol(t, name, i == 1, tl, func(bias, y cu.DevicePtr) {
						gb.gemvTC(c.x, c.w, bias, y, s.m, s.n, s.k)
					})
				}
			}
		}
	}
}
