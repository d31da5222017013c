//go:build cuda

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/compute/cpu"
)

// Every kernel is checked against its engine/compute/cpu op on random data of real
// and odd shapes (llm.c style); each check logs max |Δ|, max |ref| and the
// cosine, and fails past tol·max(1, max|ref|).

var (
	gb    *Backend
	cb    = cpu.New(0)
	noGPU error
)

func TestMain(m *testing.M) {
	gb, noGPU = New(0)
	if noGPU == nil {
		fmt.Println("device:", gb.Device())
		fmt.Println("plan:", gb.Plan())
	}
	code := m.Run()
	if gb != nil {
		st := gb.MemStats()
		fmt.Printf("allocator: reserved %d MiB, peak in use %d MiB, %d driver allocations, %d forced GCs\n",
			st.Reserved>>20, st.Peak>>20, st.DriverAllocs, st.GCs)
		gb.Close()
	}
	if generic.b != nil {
		generic.b.Close()
	}
	os.Exit(code)
}

// generic is the device opened a second time on the generic plan
// (genericBackend), where New chose the Hopper plan.
var generic struct {
	once sync.Once
	b    *Backend
	err  error
}

// genericBackend returns the device on the generic plan: gb itself where
// that is its plan, else a second backend opened with Options{Generic:
// true} on first use.
func genericBackend(t *testing.T) *Backend {
	t.Helper()
	need(t)
	if !gb.hopper {
		return gb
	}
	generic.once.Do(func() {
		generic.b, generic.err = NewWith(0, Options{Generic: true})
		if generic.err == nil {
			fmt.Println("plan:", generic.b.Plan())
		}
	})
	if generic.err != nil {
		t.Fatalf("opening the generic plan: %v", generic.err)
	}
	return generic.b
}

// forEachPlan runs f as a subtest under each plan the device runs (gb is
// that plan's backend while f runs): the one New chose, named "hopper" or
// "generic", and on a Hopper GPU also the generic plan. The exactness
// tests of the ops whose kernels the plan chooses run under it, so a
// Hopper machine checks both plans against engine/compute/cpu.
func forEachPlan(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	need(t)
	backends := []*Backend{gb}
	if gb.hopper {
		backends = append(backends, genericBackend(t))
	}
	main := gb
	defer func() { gb = main }()
	for _, b := range backends {
		gb = b
		t.Run(b.Plan().Name, f)
	}
}

func need(t *testing.T) {
	t.Helper()
	if noGPU != nil {
		t.Skip("no CUDA device:", noGPU)
	}
}

// pair is the same tensor on the CPU and the GPU backend.
type pair struct{ c, g compute.Tensor }

func randVals(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(scale * r.NormFloat64())
	}
	return v
}

func fromF32(v []float32, shape ...int) pair {
	return pair{cb.FromF32(v, shape...), gb.FromF32(v, shape...)}
}

func randF32(r *rand.Rand, scale float64, shape ...int) pair {
	return fromF32(randVals(r, compute.NumElements(shape), scale), shape...)
}

// randW uploads random weights of dtype dt to both backends.
func randW(t *testing.T, r *rand.Rand, dt compute.DType, scale float64, shape ...int) pair {
	t.Helper()
	v := randVals(r, compute.NumElements(shape), scale)
	raw := make([]byte, len(v)*dt.Size())
	for i, x := range v {
		switch dt {
		case compute.F32:
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		case compute.BF16:
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(math.Float32bits(x)>>16))
		case compute.F16:
			binary.LittleEndian.PutUint16(raw[2*i:], f32ToF16(x))
		}
	}
	c, err := cb.Upload(dt, shape, raw)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gb.Upload(dt, shape, raw)
	if err != nil {
		t.Fatal(err)
	}
	return pair{c, g}
}

func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(mant>>13)
}

// diff compares two float slices: max |Δ|, max |ref| and the cosine.
func diff(ref, got []float32) (maxd, maxr, cos float64) {
	var dot, nr, ng float64
	for i := range ref {
		a, b := float64(ref[i]), float64(got[i])
		maxd = math.Max(maxd, math.Abs(a-b))
		if math.IsNaN(b) || math.IsInf(b, 0) {
			maxd = math.Inf(1)
		}
		maxr = math.Max(maxr, math.Abs(a))
		dot += a * b
		nr += a * a
		ng += b * b
	}
	cos = 1
	if nr > 0 || ng > 0 {
		cos = dot / math.Sqrt(nr*ng)
	}
	return
}

func check(t *testing.T, name string, p pair, tol float64) {
	t.Helper()
	if !slices.Equal(p.c.Shape(), p.g.Shape()) {
		t.Fatalf("%s: shape cpu %v gpu %v", name, p.c.Shape(), p.g.Shape())
	}
	checkVals(t, name, cb.ReadF32(p.c), gb.ReadF32(p.g), tol)
}

func checkVals(t *testing.T, name string, ref, got []float32, tol float64) {
	t.Helper()
	if len(ref) != len(got) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(ref))
	}
	maxd, maxr, cos := diff(ref, got)
	lim := tol * math.Max(1, maxr)
	status := "ok"
	if !(maxd <= lim) {
		status = "FAIL"
	}
	t.Logf("%-58s max|Δ| %.3g (limit %.3g) max|ref| %.3g cos %.9f %s", name, maxd, lim, maxr, cos, status)
	if status != "ok" {
		t.Errorf("%s: max|Δ| %.3g > %.3g", name, maxd, lim)
	}
}

const tol = 1e-4

func TestLinear(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		m, k, n int
		dt      compute.DType
		bias    bool
	}{
		{1, 2048, 8512, compute.BF16, false}, // Mamba2 in_proj, decode
		{2, 2048, 8512, compute.BF16, false}, // CFG batch
		{2, 4096, 2048, compute.BF16, false}, // Mamba2 out_proj
		{2, 8192, 2048, compute.BF16, false}, // fc2
		{2, 2048, 9 * 1026, compute.BF16, false},
		{3, 100, 37, compute.BF16, true}, // K not a multiple of 8
		{8, 256, 333, compute.F16, true},
		{1, 36, 17, compute.F32, true},
		{9, 2048, 1025, compute.BF16, false}, // gemv_tc on Hopper, the tiled GEMM elsewhere
		{160, 2048, 3072, compute.BF16, false},
		{2 * 91, 256, 300, compute.F32, true},
		{77, 130, 65, compute.F16, false},
		{160, 8192, 2048, compute.BF16, true}, // prefill fc2: 8 K splits
		{100, 1500, 200, compute.F32, true},   // fp32 weight, ragged K chunks
		{142, 2048, 8512, compute.BF16, true}, // prefill in_proj (80 positions × CFG)
		{70, 264, 200, compute.F16, true},     // F16 on tensor cores, ragged tiles
		{70, 264, 200, compute.BF16, true},    // BF16 products (tc_wg on Hopper, tc_wbf elsewhere), ragged tiles and k step
		{40, 2048, 1000, compute.BF16, true},  // tc_wbf on Hopper (33–47 rows)
	}
	for _, c := range cases {
		x := randF32(r, 1, c.m, c.k)
		w := randW(t, r, c.dt, 1/math.Sqrt(float64(c.k)), c.n, c.k)
		var bc, bg compute.Tensor
		if c.bias {
			b := randW(t, r, c.dt, 0.1, c.n)
			bc, bg = b.c, b.g
		}
		got := pair{cb.Linear(x.c, w.c, bc), gb.Linear(x.g, w.g, bg)}
		check(t, fmt.Sprintf("Linear M%d K%d N%d %v bias %v", c.m, c.k, c.n, c.dt, c.bias), got, tol)
	}
	// Batched leading axes.
	x := randF32(r, 1, 2, 3, 64)
	w := randW(t, r, compute.BF16, 0.1, 40, 64)
	check(t, "Linear x [2 3 64]", pair{cb.Linear(x.c, w.c, nil), gb.Linear(x.g, w.g, nil)}, tol)
}

// linearWide is Linear x [m, k] · wᵀ + bias on tcGemm's plan for kernel,
// tc_wbf or tc_wide, whatever the rows and the weight's dtype (for
// comparing the kernels on one product).
func linearWide(kernel string, x, w, bias compute.Tensor) compute.Tensor {
	xt, wt := cast(x), cast(w)
	m, k, n := xt.shape[0], xt.shape[1], wt.shape[0]
	p := tcPlan{kernel: kernel, tileN: 128, smem: map[string]int{"tc_wbf": tcWbfSmem, "tc_wide": tcWideSmem}[kernel]}
	p.splits, p.chunk = wideSplits(k, m, n, gb.sms)
	var out *tensor
	gb.do(func() {
		out = gb.newTensor(compute.F32, m, n)
		bp := nullPtr
		if bias != nil {
			bp = gb.asF32(cast(bias)).ptr()
		}
		gb.tcRun(p, tcLinear, xt, wt, bp, out, m, n, k, tcShape{})
	})
	return out
}

// TestWbfAccuracy: tc_wbf (BF16 products of the activation's two BF16
// parts) is about as close to the CPU's fp32 product as tc_wide (two TF32
// parts) on the prefill shapes, activations of mixed magnitudes included:
// the error is the fp32 accumulation's (one BF16 part, or a broken split,
// is off by 1e-3).
func TestWbfAccuracy(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ m, k, n int }{{160, 2048, 8512}, {160, 8192, 2048}, {32, 2048, 3072}, {70, 264, 200}} {
		v := randVals(r, c.m*c.k, 1)
		for i := range v {
			v[i] *= float32(math.Exp2(float64(r.IntN(16) - 8))) // 2⁻⁸ … 2⁷
		}
		x := fromF32(v, c.m, c.k)
		w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(c.k)), c.n, c.k)
		ref := cb.ReadF32(cb.Linear(x.c, w.c, nil))
		errOf := func(kernel string) float64 {
			maxd, maxr, _ := diff(ref, gb.ReadF32(linearWide(kernel, x.g, w.g, nil)))
			return maxd / math.Max(1, maxr)
		}
		wide, wbf := errOf("tc_wide"), errOf("tc_wbf")
		t.Logf("M%d K%d N%d: max|Δ|/max|ref| tc_wbf %.3g, tc_wide %.3g", c.m, c.k, c.n, wbf, wide)
		if !(wbf <= 2*wide+2e-6) {
			t.Errorf("M%d K%d N%d: tc_wbf error %.3g against tc_wide's %.3g", c.m, c.k, c.n, wbf, wide)
		}
	}
}

func TestEmbedding(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []compute.DType{compute.BF16, compute.F32, compute.F16} {
		tab := randW(t, r, dt, 1, 1026, 200)
		ids := make([]int32, 2*7)
		for i := range ids {
			ids[i] = int32(r.IntN(1026))
		}
		ids[0], ids[1] = 0, 1025
		got := pair{cb.Embedding(tab.c, cb.FromI32(ids, 2, 7)), gb.Embedding(tab.g, gb.FromI32(ids, 2, 7))}
		check(t, "Embedding "+dt.String(), got, 0)
	}
	defer func() {
		if recover() == nil {
			t.Error("Embedding with an id out of range did not panic")
		}
	}()
	tab := randW(t, r, compute.BF16, 1, 10, 4)
	gb.Embedding(tab.g, gb.FromI32([]int32{10}, 1))
}

// TestEmbeddingSum: the fused lookup-and-sum equals nine Embedding calls
// added in order and repeated per row, bit for bit (the CPU composition).
func TestEmbeddingSum(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(31, 32))
	for _, dt := range []compute.DType{compute.BF16, compute.F32} {
		for _, T := range []int{1, 7} {
			const K = 9
			var tc, tg []compute.Tensor
			for k := 0; k < K; k++ {
				tab := randW(t, r, dt, 1, 1026, 96)
				tc, tg = append(tc, tab.c), append(tg, tab.g)
			}
			ids := make([]int32, K*T)
			for i := range ids {
				ids[i] = int32(r.IntN(1026))
			}
			idc := cb.FromI32(ids, K, T)
			var sum compute.Tensor
			for k := 0; k < K; k++ {
				e := cb.Embedding(tc[k], cb.Slice(idc, 0, k, k+1))
				if sum == nil {
					sum = e
				} else {
					sum = cb.Add(sum, e)
				}
			}
			want := cb.Concat(0, sum, sum)
			got := gb.EmbeddingSum(tg, gb.FromI32(ids, K, T), 2)
			check(t, fmt.Sprintf("EmbeddingSum %v T%d", dt, T), pair{want, got}, 0)
		}
	}
}

func TestElementwise(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][]int{{2, 1, 2048}, {3, 5, 77}, {1}, {2, 96, 1001}} {
		a, b := randF32(r, 2, shape...), randF32(r, 2, shape...)
		s := fmt.Sprint(shape)
		check(t, "Add "+s, pair{cb.Add(a.c, b.c), gb.Add(a.g, b.g)}, 0)
		check(t, "Scale "+s, pair{cb.Scale(a.c, -0.37), gb.Scale(a.g, -0.37)}, 0)
		check(t, "Tanh "+s, pair{cb.Tanh(a.c), gb.Tanh(a.g)}, 1e-6)
		check(t, "CosSin "+s, pair{cb.CosSin(a.c), gb.CosSin(a.g)}, 1e-6)
		if shape[len(shape)-1]%2 == 0 {
			check(t, "SwiGLU "+s, pair{cb.SwiGLU(a.c), gb.SwiGLU(a.g)}, 1e-6)
		}
		if len(shape) == 3 {
			for _, dt := range []compute.DType{compute.F32, compute.BF16} {
				al := randW(t, r, dt, 1, shape[1])
				check(t, "Snake "+dt.String()+" "+s, pair{cb.Snake(a.c, al.c), gb.Snake(a.g, al.g)}, 1e-5)
			}
		}
	}
	// Large CosSin arguments (Fourier features).
	a := randF32(r, 300, 2, 1, 8)
	check(t, "CosSin large", pair{cb.CosSin(a.c), gb.CosSin(a.g)}, 1e-6)
}

func TestLayerNorm(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		rows, d int
		dt      compute.DType
		bias    bool
	}{{2, 2048, compute.BF16, true}, {160, 2048, compute.F32, true}, {3, 257, compute.BF16, false}, {1, 8, compute.F16, true}, {2, 12000, compute.F32, true}, {1, 4100, compute.BF16, false}} {
		x, res := randF32(r, 3, c.rows, c.d), randF32(r, 1, c.rows, c.d)
		w := randW(t, r, c.dt, 1, c.d)
		var bc, bg compute.Tensor
		if c.bias {
			b := randW(t, r, c.dt, 1, c.d)
			bc, bg = b.c, b.g
		}
		name := fmt.Sprintf("rows %d D %d %v bias %v", c.rows, c.d, c.dt, c.bias)
		check(t, "LayerNorm "+name, pair{cb.LayerNorm(x.c, w.c, bc, 1e-5), gb.LayerNorm(x.g, w.g, bg, 1e-5)}, 1e-5)
		oc, sc := cb.AddLayerNorm(x.c, res.c, w.c, bc, 1e-5)
		og, sg := gb.AddLayerNorm(x.g, res.g, w.g, bg, 1e-5)
		check(t, "AddLayerNorm out "+name, pair{oc, og}, 1e-5)
		check(t, "AddLayerNorm sum "+name, pair{sc, sg}, 0)
		oc, sc = cb.AddLayerNorm(x.c, nil, w.c, bc, 1e-5)
		og, sg = gb.AddLayerNorm(x.g, nil, w.g, bg, 1e-5)
		check(t, "AddLayerNorm(nil) out "+name, pair{oc, og}, 1e-5)
		check(t, "AddLayerNorm(nil) sum "+name, pair{sc, sg}, 0)
	}
	// Rows far from zero mean: layernorm_v8's two passes over the
	// registers must still agree with the CPU's.
	for _, off := range []float32{100, -3000} {
		v := randVals(r, 2*2048, 1)
		for i := range v {
			v[i] += off
		}
		x, w := fromF32(v, 2, 1, 2048), randW(t, r, compute.F32, 1, 2048)
		check(t, fmt.Sprintf("LayerNorm mean %v", off), pair{cb.LayerNorm(x.c, w.c, nil, 1e-5), gb.LayerNorm(x.g, w.g, nil, 1e-5)}, 1e-5)
	}
}

func TestShapeOps(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(9, 10))
	x := randF32(r, 1, 2, 5, 12)
	for axis, rng := range [][2]int{{1, 2}, {1, 4}, {3, 11}} {
		check(t, fmt.Sprintf("Slice axis %d %v", axis, rng),
			pair{cb.Slice(x.c, axis, rng[0], rng[1]), gb.Slice(x.g, axis, rng[0], rng[1])}, 0)
	}
	w := randW(t, r, compute.BF16, 1, 6, 10)
	check(t, "Slice BF16", pair{cb.Slice(w.c, 1, 3, 9), gb.Slice(w.g, 1, 3, 9)}, 0)
	check(t, "ReadF32 BF16", w, 0)
	check(t, "ReadF32 F16", randW(t, r, compute.F16, 1, 7, 3), 0)
	ids := []int32{5, 6, 7, 8, 9, 10}
	gi := gb.Slice(gb.FromI32(ids, 2, 3), 1, 1, 3)
	if got := gb.ReadI32(gi); fmt.Sprint(got) != "[6 7 9 10]" {
		t.Errorf("Slice I32: %v", got)
	}
	y := randF32(r, 1, 2, 3, 12)
	z := randF32(r, 1, 2, 1, 12)
	check(t, "Concat axis 1", pair{cb.Concat(1, x.c, y.c, z.c), gb.Concat(1, x.g, y.g, z.g)}, 0)
	u := randF32(r, 1, 2, 5, 3)
	check(t, "Concat axis 2", pair{cb.Concat(2, x.c, u.c), gb.Concat(2, x.g, u.g)}, 0)
	dst := randF32(r, 1, 2, 9, 12)
	cb.CopyInto(dst.c, 1, 4, x.c)
	gb.CopyInto(dst.g, 1, 4, x.g)
	check(t, "CopyInto", dst, 0)
	rs := pair{cb.Reshape(x.c, 10, 12), gb.Reshape(x.g, 10, 12)}
	check(t, "Reshape", rs, 0)
	// A view outlives Free of the tensor it was made from.
	v := gb.Reshape(x.g, 120)
	gb.Free(x.g)
	checkVals(t, "Reshape view after Free", cb.ReadF32(x.c), gb.ReadF32(v), 0)
}

// TestAttention: prefills (300 positions, continuations of 5 and 9) and
// decode steps agree with the CPU's attention and cache writes, under
// each plan: prefills on attn_pre (cached rows through shared memory)
// where the head fits it, else on attn (head dim past 128 or not a
// multiple of 4, more than 8 query heads per KV head). A prefill's cache
// writes, from rot_table's angles, equal bit for bit those of the same
// positions written one decode step at a time (angles per element).
func TestAttention(t *testing.T) { forEachPlan(t, testAttention) }

func testAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	specs := []compute.AttentionSpec{
		{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 128, Rotary: compute.RotaryHalves, RotaryBase: 10000},
		{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 128, Rotary: compute.RotaryInterleaved, RotaryBase: 10000},
		{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 64, Rotary: compute.RotaryHalves, RotaryBase: 10000}, // real hybrid
		{Heads: 4, KVHeads: 2, HeadDim: 64, RotaryDim: 32, Rotary: compute.RotaryHalves, RotaryBase: 10000},
		{Heads: 3, KVHeads: 1, HeadDim: 40, RotaryDim: 40, Rotary: compute.RotaryInterleaved, RotaryBase: 10000},
		{Heads: 4, KVHeads: 2, HeadDim: 64, RotaryDim: 0, RotaryBase: 10000},
		{Heads: 8, KVHeads: 1, HeadDim: 32, RotaryDim: 32, Rotary: compute.RotaryHalves, RotaryBase: 10000},      // one query position a block
		{Heads: 4, KVHeads: 2, HeadDim: 192, RotaryDim: 192, Rotary: compute.RotaryHalves, RotaryBase: 10000},    // attn: head past 128
		{Heads: 2, KVHeads: 1, HeadDim: 30, RotaryDim: 30, Rotary: compute.RotaryInterleaved, RotaryBase: 10000}, // attn: not float4s
		{Heads: 16, KVHeads: 1, HeadDim: 32, RotaryDim: 16, Rotary: compute.RotaryHalves, RotaryBase: 10000},     // attn: 16 query heads a KV head
	}
	for _, a := range specs {
		const B, maxT = 2, 400
		kc := pair{cb.Zeros(B, maxT, a.KVHeads, a.HeadDim), gb.Zeros(B, maxT, a.KVHeads, a.HeadDim)}
		vc := pair{cb.Zeros(B, maxT, a.KVHeads, a.HeadDim), gb.Zeros(B, maxT, a.KVHeads, a.HeadDim)}
		pre := attnPreFits(a.Heads, a.KVHeads, a.HeadDim)
		w := (a.Heads + 2*a.KVHeads) * a.HeadDim
		pos := 0
		for _, T := range []int{300, 1, 1, 5, 1, 9} { // prefill longer than a 256 chunk, decode, continuations
			qkv := randF32(r, 1, B, T, w)
			oc := cb.Attention(qkv.c, kc.c, vc.c, compute.Positions{Start: pos}, a)
			kc2, vc2 := gb.Scale(kc.g, 1), gb.Scale(vc.g, 1) // the caches before, for the positions one step at a time
			before := gb.k["attn_pre"].launches
			og := gb.Attention(qkv.g, kc.g, vc.g, compute.Positions{Start: pos}, a)
			if ran, want := gb.k["attn_pre"].launches > before, T > 1 && pre; ran != want {
				t.Fatalf("T %d: attn_pre ran %v, want %v", T, ran, want)
			}
			name := fmt.Sprintf("Attention H%d/%d Dh%d rot%d %v pos %d T %d attn_pre %v", a.Heads, a.KVHeads, a.HeadDim, a.RotaryDim, a.Rotary, pos, T, pre)
			check(t, name, pair{oc, og}, tol)
			check(t, name+" kcache", kc, 1e-5)
			check(t, name+" vcache", vc, 0)
			if T > 1 { // rot_table's angles are rot_angle's: the cache writes agree bit for bit
				for p := 0; p < T; p++ {
					gb.Free(gb.Attention(gb.Slice(qkv.g, 1, p, p+1), kc2, vc2, compute.Positions{Start: pos + p}, a))
				}
				checkVals(t, name+" kcache, written step by step", gb.ReadF32(kc.g), gb.ReadF32(kc2), 0)
				checkVals(t, name+" vcache, written step by step", gb.ReadF32(vc.g), gb.ReadF32(vc2), 0)
			}
			gb.Free(kc2)
			gb.Free(vc2)
			pos += T
		}
	}
}

// TestAttnStep: a decode step's attention under each plan — attn_step on
// Hopper (clusters of 8 blocks × 16 warps, so 128 warps share a (row, KV
// head)), attn_split and attn_merge on the generic plan — agrees with the
// CPU's, over cached contexts of 1 to 4000 positions (a warp walking
// none, one or 31 of them), 1 to 4 query heads per KV head, head dims 16
// to 128, both rotary conventions, and rows at different positions, from
// the host (compute.Positions.Rows) and from the device
// (compute.Positions.Dev, one position per row). The new key and value
// land in the cache.
func TestAttnStep(t *testing.T) { forEachPlan(t, testAttnStep) }

func testAttnStep(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	specs := []compute.AttentionSpec{
		{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 64, Rotary: compute.RotaryHalves, RotaryBase: 10000}, // real hybrid
		{Heads: 16, KVHeads: 4, HeadDim: 128, RotaryDim: 128, Rotary: compute.RotaryInterleaved, RotaryBase: 10000},
		{Heads: 4, KVHeads: 4, HeadDim: 16, RotaryDim: 16, Rotary: compute.RotaryHalves, RotaryBase: 10000},
		{Heads: 3, KVHeads: 1, HeadDim: 40, RotaryDim: 40, Rotary: compute.RotaryInterleaved, RotaryBase: 10000},
		{Heads: 4, KVHeads: 2, HeadDim: 64, RotaryDim: 0, RotaryBase: 10000},
	}
	kernel := "attn_split"
	if gb.clusterAttention {
		kernel = "attn_step"
	}
	for _, a := range specs {
		const B, maxT = 2, 4000
		w := (a.Heads + 2*a.KVHeads) * a.HeadDim
		kc0 := randF32(r, 1, B, maxT, a.KVHeads, a.HeadDim)
		vc0 := randF32(r, 1, B, maxT, a.KVHeads, a.HeadDim)
		for _, pos := range []int{0, 1, 127, 128, 129, 1000, maxT - 1} {
			qkv := randF32(r, 1, B, 1, w)
			kc, vc := cb.Scale(kc0.c, 1), cb.Scale(vc0.c, 1)
			want := cb.Attention(qkv.c, kc, vc, compute.Positions{Start: pos}, a)
			kg, vg := gb.Scale(kc0.g, 1), gb.Scale(vc0.g, 1)
			before := gb.k[kernel].launches
			got := gb.Attention(qkv.g, kg, vg, compute.Positions{Start: pos}, a)
			if gb.k[kernel].launches == before {
				t.Fatalf("%s did not run", kernel)
			}
			name := fmt.Sprintf("H%d/%d Dh%d rot%d %v pos %d %s", a.Heads, a.KVHeads, a.HeadDim, a.RotaryDim, a.Rotary, pos, kernel)
			check(t, name, pair{want, got}, tol)
			check(t, name+" kcache", pair{kc, kg}, 1e-5)
			check(t, name+" vcache", pair{vc, vg}, 0)
		}
		// Rows at different positions: row b at pos[b mod 2], from the host
		// and from the device.
		pos := []int{3, 2500}
		dev := gb.FromI32([]int32{int32(pos[0]), int32(pos[1])}, len(pos))
		for _, g := range []compute.Positions{{Rows: pos}, {Dev: dev}} {
			qkv := randF32(r, 1, B, 1, w)
			kc, vc := cb.Scale(kc0.c, 1), cb.Scale(vc0.c, 1)
			want := cb.Attention(qkv.c, kc, vc, compute.Positions{Rows: pos}, a)
			kg, vg := gb.Scale(kc0.g, 1), gb.Scale(vc0.g, 1)
			got := gb.Attention(qkv.g, kg, vg, g, a)
			name := fmt.Sprintf("H%d/%d Dh%d rows %v on the device %v %s", a.Heads, a.KVHeads, a.HeadDim, pos, g.Dev != nil, kernel)
			check(t, name, pair{want, got}, tol)
			check(t, name+" kcache", pair{kc, kg}, 1e-5)
			check(t, name+" vcache", pair{vc, vg}, 0)
		}
		gb.Free(dev)
	}
}

func mambaWeights(t *testing.T, r *rand.Rand, s compute.Mamba2Spec, dt compute.DType) (compute.Mamba2Weights, compute.Mamba2Weights) {
	C := s.DInner + 2*s.Groups*s.DState
	cw := randW(t, r, dt, 0.5, C, 1, s.DConv)
	cbias := randW(t, r, dt, 0.2, C)
	dtb := randW(t, r, dt, 0.5, s.Heads)
	al := make([]float32, s.Heads)
	for i := range al {
		al[i] = float32(math.Log(1 + 15*r.Float64()))
	}
	alog := fromF32(al, s.Heads)
	d := randW(t, r, dt, 1, s.Heads)
	nw := randW(t, r, dt, 1, s.DInner)
	return compute.Mamba2Weights{ConvWeight: cw.c, ConvBias: cbias.c, DtBias: dtb.c, ALog: alog.c, D: d.c, NormWeight: nw.c},
		compute.Mamba2Weights{ConvWeight: cw.g, ConvBias: cbias.g, DtBias: dtb.g, ALog: alog.g, D: d.g, NormWeight: nw.g}
}

// TestMamba2: the Mamba2 op (prefill and decode steps, both states)
// agrees with the CPU's under each plan, on the real hybrid's shape and
// odd ones: the decode step on mamba_step (4 or 8 state slots a lane) or,
// where its input rows are not float4s, on mamba_conv and mamba_scan.
func TestMamba2(t *testing.T) { forEachPlan(t, testMamba2) }

func testMamba2(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	specs := []compute.Mamba2Spec{
		{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, // real hybrid
		{DInner: 96, Heads: 6, HeadDim: 16, DState: 20, Groups: 2, DConv: 3, Eps: 1e-5},     // odd, through mamba_conv and mamba_scan
		{DInner: 128, Heads: 4, HeadDim: 32, DState: 40, Groups: 2, DConv: 3, Eps: 1e-5},    // odd, through mamba_step
		{DInner: 128, Heads: 4, HeadDim: 32, DState: 200, Groups: 1, DConv: 4, Eps: 1e-5},   // mamba_step's 8 slots a lane
	}
	for i, s := range specs {
		const B = 2
		dt := compute.BF16
		if i == 1 {
			dt = compute.F32
		}
		wc, wg := mambaWeights(t, r, s, dt)
		C := s.DInner + 2*s.Groups*s.DState
		E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
		conv := pair{cb.Zeros(B, C, s.DConv), gb.Zeros(B, C, s.DConv)}
		ssm := pair{cb.Zeros(B, s.Heads, s.HeadDim, s.DState), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)}
		pos := 0
		for _, T := range []int{300, 1, 1, 2, 1, 7} {
			in := randF32(r, 1, B, T, E)
			oc := cb.Mamba2(in.c, wc, conv.c, ssm.c, s)
			og := gb.Mamba2(in.g, wg, conv.g, ssm.g, s)
			name := fmt.Sprintf("Mamba2 Di%d H%d N%d G%d Kc%d pos %d T %d", s.DInner, s.Heads, s.DState, s.Groups, s.DConv, pos, T)
			check(t, name, pair{oc, og}, tol)
			check(t, name+" conv state", conv, 0)
			check(t, name+" ssm state", ssm, tol)
			pos += T
		}
	}
}

func TestConv(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(15, 16))
	type cs = compute.Conv1dSpec
	convs := []struct {
		b, cin, cout, k, t int
		spec               cs
		bias               bool
	}{
		{1, 1024, 1536, 7, 40, cs{Padding: 3}, true},            // DAC decoder conv1
		{1, 96, 96, 7, 301, cs{Padding: 27, Dilation: 9}, true}, // residual unit
		{2, 64, 64, 1, 129, cs{}, true},                         // k1
		{1, 32, 64, 16, 160, cs{Stride: 8, Padding: 4}, true},   // encoder downsample
		{2, 6, 9, 5, 33, cs{Padding: 2, Groups: 3}, false},      // groups, odd
		{1, 96, 1, 7, 1000, cs{Padding: 3}, true},               // to one channel
		{1, 3, 5, 3, 4, cs{Stride: 2}, false},
	}
	for _, c := range convs {
		x := randF32(r, 1, c.b, c.cin, c.t)
		w := randW(t, r, compute.F32, 1/math.Sqrt(float64(c.cin/max(c.spec.Groups, 1)*c.k)), c.cout, c.cin/max(c.spec.Groups, 1), c.k)
		var bc, bg compute.Tensor
		if c.bias {
			b := randW(t, r, compute.F32, 0.05, c.cout)
			bc, bg = b.c, b.g
		}
		name := fmt.Sprintf("Conv1d B%d %d→%d K%d T%d %+v", c.b, c.cin, c.cout, c.k, c.t, c.spec)
		check(t, name, pair{cb.Conv1d(x.c, w.c, bc, c.spec), gb.Conv1d(x.g, w.g, bg, c.spec)}, tol)
	}
	// A BF16 weight is converted once and then reused.
	x := randF32(r, 1, 1, 8, 20)
	w := randW(t, r, compute.BF16, 0.3, 4, 8, 3)
	for i := 0; i < 2; i++ {
		check(t, "Conv1d BF16 weight", pair{cb.Conv1d(x.c, w.c, nil, cs{Padding: 1}), gb.Conv1d(x.g, w.g, nil, cs{Padding: 1})}, tol)
	}
	tconvs := []struct {
		b, cin, cout, k, t int
		spec               cs
	}{
		{1, 1536, 768, 16, 20, cs{Stride: 8, Padding: 4}}, // DAC block 1
		{1, 192, 96, 4, 77, cs{Stride: 2, Padding: 1}},    // DAC block 4
		{2, 5, 3, 5, 9, cs{Stride: 3, Padding: 2, Dilation: 2, OutPadding: 1}},
		{1, 4, 6, 3, 7, cs{}},
	}
	for _, c := range tconvs {
		x := randF32(r, 1, c.b, c.cin, c.t)
		w := randW(t, r, compute.F32, 1/math.Sqrt(float64(c.cin*c.k)), c.cin, c.cout, c.k)
		b := randW(t, r, compute.F32, 0.05, c.cout)
		name := fmt.Sprintf("ConvTranspose1d B%d %d→%d K%d T%d %+v", c.b, c.cin, c.cout, c.k, c.t, c.spec)
		check(t, name, pair{cb.ConvTranspose1d(x.c, w.c, b.c, c.spec), gb.ConvTranspose1d(x.g, w.g, b.g, c.spec)}, tol)
	}
}

// TestConvWindowExact: a window of a longer signal gives bit-identical
// outputs (the DAC streamer relies on it): on the default kernels, and
// with the long signal's split-K pieces folded into conv_tcq's blocks and
// the window's summed by tc_reduce_rows (convFold 10 % of a wave sits
// between the two grids).
func TestConvWindowExact(t *testing.T) {
	need(t)
	defer func(fold int) { convFold = fold }(convFold)
	for _, v := range []struct {
		name string
		fold int
	}{{"default", convFold}, {"folded long, split window", 10}} {
		convFold = v.fold
		t.Run(v.name, testConvWindowExact)
	}
}

func testConvWindowExact(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	type cs = compute.Conv1dSpec
	const T = 300
	for _, c := range []struct {
		cin, cout, k int
		spec         cs
		transposed   bool
	}{
		{48, 40, 7, cs{Padding: 9, Dilation: 3}, false},
		{512, 512, 7, cs{Padding: 9, Dilation: 3}, false}, // many K splits
		{96, 1, 7, cs{Padding: 3}, false},                 // conv_direct
		{384, 192, 8, cs{Stride: 4, Padding: 2}, true},    // per-phase transposed
	} {
		xv := randVals(r, c.cin*T, 1)
		var w pair
		conv := func(x compute.Tensor) []float32 {
			if c.transposed {
				return gb.ReadF32(gb.ConvTranspose1d(x, w.g, nil, c.spec))
			}
			return gb.ReadF32(gb.Conv1d(x, w.g, nil, c.spec))
		}
		if c.transposed {
			w = randW(t, r, compute.F32, 0.1, c.cin, c.cout, c.k)
		} else {
			w = randW(t, r, compute.F32, 0.1, c.cout, c.cin, c.k)
		}
		x := gb.FromF32(xv, 1, c.cin, T)
		long := conv(x)
		win := conv(gb.Slice(x, 2, 100, 200))
		// Output t of the window (valid region, away from its edges) is
		// long output off+t.
		up, margin := 1, c.spec.Padding+c.spec.Dilation*c.k
		if c.transposed {
			up = c.spec.Stride
		}
		lw, ll := len(win)/c.cout, len(long)/c.cout
		off := 100 * up
		for ch := 0; ch < c.cout; ch++ {
			for tt := margin; tt < lw-margin; tt++ {
				if a, b := win[ch*lw+tt], long[ch*ll+off+tt]; a != b {
					t.Fatalf("%+v: channel %d t %d: window %v long %v", c, ch, tt, a, b)
				}
			}
		}
	}
}

// TestSteadyStateAllocates: after warm-up, repeating the same ops (results
// dropped without Free, as the models do) recycles the dropped tensors'
// blocks instead of asking the driver for new ones: a leak would take one
// driver allocation per tensor handed out (40000 in the measured steps).
func TestSteadyStateAllocates(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(19, 20))
	w := randW(t, r, compute.BF16, 0.05, 2048, 2048)
	x := gb.FromF32(randVals(r, 2*2048, 1), 2, 2048)
	const perStep = 40 // tensors handed out by one step
	step := func() {
		y := x
		for i := 0; i < perStep/2; i++ {
			y = gb.Linear(gb.Scale(y, 0.5), w.g, nil)
		}
		gb.ReadF32(y)
	}
	// Warm up until a stretch of steps that forced a collection took no new
	// driver memory: the allocator's collection threshold adapts to what
	// earlier tests did (up to 2 GiB after collections that found nothing),
	// and only comes back down through useful collections.
	for chunk := 0; chunk < 40; chunk++ {
		s0 := gb.MemStats()
		for i := 0; i < 400; i++ { // 400 steps hand out 256 MiB
			step()
		}
		if s1 := gb.MemStats(); s1.GCs > s0.GCs && s1.DriverAllocs == s0.DriverAllocs {
			break
		}
	}
	// Start the measured steps as a steady pool runs: from a collection,
	// with the threshold at its floor. Where the warm-up left it depends on
	// what earlier tests did; above the measured steps' 640 MiB a miss
	// could not force a collection, and the dropped blocks came back only
	// as the runtime's cleanup goroutines got to them (once on an H200,
	// 2026-11-30, 15 blocks of 40000 came from the driver). Whether a miss
	// happens at all depends on those goroutines too.
	gb.pool.mu.Lock()
	gb.pool.gcEvery = gcMin
	gb.pool.mu.Unlock()
	gb.pool.collect(-1)
	before := gb.MemStats()
	const steps = 1000
	for i := 0; i < steps; i++ {
		step()
	}
	after := gb.MemStats()
	t.Logf("driver allocations %d → %d, reserved %d → %d MiB, forced GCs %d → %d",
		before.DriverAllocs, after.DriverAllocs, before.Reserved>>20, after.Reserved>>20, before.GCs, after.GCs)
	// A few blocks may still come from the driver while a forced collection
	// is pending; a leak takes one per tensor.
	if n := after.DriverAllocs - before.DriverAllocs; n > steps*perStep/100 {
		t.Errorf("steady state took %d new driver allocations for %d tensors handed out", n, steps*perStep)
	}
}

// TestConcurrentCallers: ops from many goroutines are serialised on the
// owner goroutine and stay correct.
func TestConcurrentCallers(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(21, 22))
	w := randW(t, r, compute.BF16, 0.05, 512, 256)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		xv := randVals(r, 2*256, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref := cb.ReadF32(cb.Linear(cb.FromF32(xv, 2, 256), w.c, nil))
			for i := 0; i < 50; i++ {
				got := gb.ReadF32(gb.Linear(gb.FromF32(xv, 2, 256), w.g, nil))
				if d, _, _ := diff(ref, got); d > 1e-4 {
					t.Errorf("goroutine result differs by %g", d)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestMisusePanicsInCaller(t *testing.T) {
	need(t)
	defer func() {
		if r := recover(); r == nil {
			t.Error("shape mismatch did not panic")
		} else {
			t.Logf("panic: %v", r)
		}
	}()
	gb.Add(gb.Zeros(2, 3), gb.Zeros(3, 2))
}

// TestGraphReplay: ops captured once replay correctly on new inputs.
func TestGraphReplay(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(25, 26))
	w := randW(t, r, compute.BF16, 0.05, 512, 512)
	nw := randW(t, r, compute.BF16, 1, 512)
	xin := gb.Zeros(2, 512)
	var out compute.Tensor
	g, err := gb.Capture(func() {
		y := gb.Linear(xin, w.g, nil)
		for i := 0; i < 10; i++ {
			y = gb.Linear(gb.LayerNorm(y, nw.g, nil, 1e-5), w.g, nil)
		}
		out = gb.Add(y, xin)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	for it := 0; it < 3; it++ {
		xv := randVals(r, 2*512, 1)
		gb.CopyInto(xin, 0, 0, gb.FromF32(xv, 2, 512))
		g.Launch()
		xc := cb.FromF32(xv, 2, 512)
		y := cb.Linear(xc, w.c, nil)
		for i := 0; i < 10; i++ {
			y = cb.Linear(cb.LayerNorm(y, nw.c, nil, 1e-5), w.c, nil)
		}
		checkVals(t, fmt.Sprintf("graph replay %d", it), cb.ReadF32(cb.Add(y, xc)), gb.ReadF32(out), tol)
	}
}

// TestUseAfterClose: a closed backend panics in the caller instead of
// blocking it.
func TestUseAfterClose(t *testing.T) {
	need(t)
	b, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	x := b.Zeros(4)
	b.Close()
	b.Close() // idempotent
	defer func() {
		if r := recover(); r == nil {
			t.Error("use after Close did not panic")
		}
	}()
	b.ReadF32(x)
}

// convCases are the DAC's convolution shapes (and a few odd ones):
// batched, strided, dilated and transposed.
var convCases = []struct {
	b, cin, cout, k, t int
	spec               compute.Conv1dSpec
	transposed         bool
}{
	{1, 1024, 1536, 7, 36, compute.Conv1dSpec{Padding: 3}, false},
	{1, 768, 768, 7, 288, compute.Conv1dSpec{Padding: 9, Dilation: 3}, false},
	{1, 384, 384, 7, 2304, compute.Conv1dSpec{Padding: 27, Dilation: 9}, false},
	{2, 192, 192, 1, 1000, compute.Conv1dSpec{}, false},
	{1, 96, 96, 7, 4700, compute.Conv1dSpec{Padding: 3}, false},
	{1, 64, 128, 4, 301, compute.Conv1dSpec{Stride: 2, Padding: 1}, false},
	{1, 1536, 768, 16, 36, compute.Conv1dSpec{Stride: 8, Padding: 4}, true},
	{2, 384, 192, 8, 290, compute.Conv1dSpec{Stride: 4, Padding: 2}, true},
	{1, 192, 96, 4, 1111, compute.Conv1dSpec{Stride: 2, Padding: 1}, true},
	{1, 768, 768, 1, 16, compute.Conv1dSpec{}, false}, // a 2-frame emission's: split, few blocks
}

// convOutputs runs each of convCases after set (which may move convFold
// and convDeepWave, restored after), returning the outputs per case, and
// with ref the CPU backend's outputs for the same inputs (each output
// accumulated in float64 and rounded once: the near-exact reference).
func convOutputs(t *testing.T, seed uint64, set func(), ref bool) (outs, cpuOuts [][]float32) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	defer func(fold, deep int) { convFold, convDeepWave = fold, deep }(convFold, convDeepWave)
	set()
	for _, c := range convCases {
		var w pair
		if c.transposed {
			w = randW(t, r, compute.F32, 0.05, c.cin, c.cout, c.k)
		} else {
			w = randW(t, r, compute.F32, 0.05, c.cout, c.cin, c.k)
		}
		bias := randW(t, r, compute.F32, 0.05, c.cout)
		x := fromF32(randVals(r, c.b*c.cin*c.t, 1), c.b, c.cin, c.t)
		if c.transposed {
			outs = append(outs, gb.ReadF32(gb.ConvTranspose1d(x.g, w.g, bias.g, c.spec)))
		} else {
			outs = append(outs, gb.ReadF32(gb.Conv1d(x.g, w.g, bias.g, c.spec)))
		}
		if ref && c.transposed {
			cpuOuts = append(cpuOuts, cb.ReadF32(cb.ConvTranspose1d(x.c, w.c, bias.c, c.spec)))
		} else if ref {
			cpuOuts = append(cpuOuts, cb.ReadF32(cb.Conv1d(x.c, w.c, bias.c, c.spec)))
		}
	}
	return outs, cpuOuts
}

// TestConvAccuracy: the convolutions (conv_tcq: tensor cores, three TF32
// products per 8-wide k step summed in fp32) stay within 1e-5 of the
// largest output of the CPU's float64-accumulated ones on every DAC shape.
// Products accumulated in the tensor cores over all of k reach only ~60 dB
// (1e-3), and a wrong fragment placement is off by the outputs' own size.
func TestConvAccuracy(t *testing.T) {
	need(t)
	got, exact := convOutputs(t, 23, func() {}, true)
	for ci, c := range convCases {
		a, b := exact[ci], got[ci]
		if len(a) != len(b) {
			t.Fatalf("%+v: %d vs %d outputs", c, len(a), len(b))
		}
		var maxRef, maxD, sig, noise float64
		for i := range a {
			d := math.Abs(float64(a[i]) - float64(b[i]))
			maxRef, maxD = max(maxRef, math.Abs(float64(a[i]))), max(maxD, d)
			sig += float64(a[i]) * float64(a[i])
			noise += d * d
		}
		snr := 10 * math.Log10(sig/max(noise, 1e-300))
		t.Logf("cin %d cout %d k %d t %d transposed %v: max|Δ| %.3g of max|ref| %.3g, SNR %.1f dB", c.cin, c.cout, c.k, c.t, c.transposed, maxD, maxRef, snr)
		if !(maxD <= 1e-5*maxRef) {
			t.Errorf("%+v: max|Δ| %.3g > 1e-5 · max|ref| %.3g", c, maxD, maxRef)
		}
	}
}

// TestConvKernelsAgree: conv_tcq_n32 with its split-K pieces summed by
// tc_reduce_rows, the same with the pieces folded into its blocks, and
// conv_tcq_n32_deep give the same bits on every conv case (strided,
// batched, transposed), so a streamed window and the long signal agree
// whichever the grid sizes pick; and a weight is laid out once.
func TestConvKernelsAgree(t *testing.T) {
	need(t)
	ref, _ := convOutputs(t, 31, func() { convFold, convDeepWave = 0, 0 }, false)
	reduces := map[string]int{}
	for _, v := range []struct {
		name       string
		fold, deep int
		kernel     string
	}{
		{"split", 0, 0, "conv_tcq_n32"},
		{"folded", 1, 0, "conv_tcq_n32"},
		{"deep", 0, 1 << 20, "conv_tcq_n32_deep"},
		{"deep, folded", 1, 1 << 20, "conv_tcq_n32_deep"},
	} {
		var got [][]float32
		ran := launchesOf(func() {
			got, _ = convOutputs(t, 31, func() { convFold, convDeepWave = v.fold, v.deep }, false)
		})
		if ran[v.kernel] == 0 {
			t.Fatalf("%s: %s did not run (%v)", v.name, v.kernel, ran)
		}
		reduces[v.name] = ran["tc_reduce_rows"]
		for ci, c := range convCases {
			for i := range ref[ci] {
				if got[ci][i] != ref[ci][i] {
					t.Fatalf("%+v: output %d: split %v, %s %v", c, i, ref[ci][i], v.name, got[ci][i])
				}
			}
		}
	}
	if reduces["folded"] >= reduces["split"] {
		t.Errorf("folding the splits left %d split sums of %d", reduces["folded"], reduces["split"])
	}
	r := rand.New(rand.NewPCG(33, 34))
	w := randW(t, r, compute.F32, 0.05, 96, 96, 7)
	x := randF32(r, 1, 1, 96, 500)
	preps := gb.k["conv_prep_a"].launches
	for i := 0; i < 3; i++ {
		gb.ReadF32(gb.Conv1d(x.g, w.g, nil, compute.Conv1dSpec{Padding: 3}))
	}
	if n := gb.k["conv_prep_a"].launches - preps; n != 1 {
		t.Errorf("three convolutions with one weight laid it out %d times", n)
	}
}

// TestScanPreKernels: every d_state up to the kernels' limit has a loaded
// prefill scan with enough slots, and no more than twice what it needs.
func TestScanPreKernels(t *testing.T) {
	need(t)
	for n := 1; n <= mambaMaxState; n++ {
		name := scanPreKernel(n)
		var s int
		if _, err := fmt.Sscanf(name, "mamba_scan_pre_n%d", &s); err != nil || gb.k[name] == nil {
			t.Fatalf("d_state %d: %s is not a loaded kernel (%v)", n, name, err)
		}
		if 32*s < n || (s > 1 && 16*s >= n) {
			t.Errorf("d_state %d: %d slots per lane", n, s)
		}
	}
}

// TestMambaPrefillMatchesSteps: the prefill path of the shapes the chunked
// scan does not take (mamba_conv_par, mamba_dt, mamba_scan_pre_nS with
// its chunked reduction) gives the same bits as feeding the same positions
// one at a time through the decode path (mamba_step), for the output and
// both states: the two scans do the same arithmetic in the same order. 37
// positions cross two 16-position chunks and end inside a third.
func TestMambaPrefillMatchesSteps(t *testing.T) {
	need(t)
	testMambaPrefillSteps(t, 37, 0, []compute.Mamba2Spec{
		{DInner: 128, Heads: 4, HeadDim: 32, DState: 40, Groups: 2, DConv: 3, Eps: 1e-5},
		{DInner: 768, Heads: 16, HeadDim: 48, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, // head dim not a multiple of 32
	})
}

// TestMambaChunkedScan: the chunked prefill scan (mamba_ssd_cb, then
// mamba_ssd_pre_cb) agrees with the same positions fed one at a time
// through the decode path to rounding, for the output and the SSM state
// (the conv state bit for bit), over lengths within one chunk, across
// chunks and ending inside one, d_state 128 (the real hybrid's) and 64
// with two groups.
func TestMambaChunkedScan(t *testing.T) {
	need(t)
	specs := []compute.Mamba2Spec{
		{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5},
		{DInner: 256, Heads: 8, HeadDim: 32, DState: 64, Groups: 2, DConv: 4, Eps: 1e-5},
	}
	for _, s := range specs {
		if !useSSD(s.HeadDim, s.DState) {
			t.Fatalf("%+v does not take the chunked scan", s)
		}
	}
	for _, T := range []int{5, 16, 37, 80} {
		testMambaPrefillSteps(t, T, 2e-5, specs)
	}
}

// testMambaPrefillSteps compares a T-position prefill through Mamba2 with
// T single steps for each spec, the output and the SSM state to tol (0:
// bit for bit).
func testMambaPrefillSteps(t *testing.T, T int, tol float64, specs []compute.Mamba2Spec) {
	r := rand.New(rand.NewPCG(15, uint64(T)))
	for _, s := range specs {
		if useSSD(s.HeadDim, s.DState) != (tol != 0) {
			t.Fatalf("%+v: chunked scan %v with tolerance %g", s, useSSD(s.HeadDim, s.DState), tol)
		}
		const B = 2
		_, wg := mambaWeights(t, r, s, compute.BF16)
		C := s.DInner + 2*s.Groups*s.DState
		E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
		convP, ssmP := gb.Zeros(B, C, s.DConv), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)
		convS, ssmS := gb.Zeros(B, C, s.DConv), gb.Zeros(B, s.Heads, s.HeadDim, s.DState)
		// Two prefills: from zero states, then continuing from the first's.
		for round := 0; round < 2; round++ {
			vals := randVals(r, B*T*E, 1)
			outP := gb.ReadF32(gb.Mamba2(gb.FromF32(vals, B, T, E), wg, convP, ssmP, s))
			outS := make([]float32, len(outP))
			D := len(outP) / (B * T)
			for p := 0; p < T; p++ {
				col := make([]float32, 0, B*E)
				for b := 0; b < B; b++ {
					col = append(col, vals[(b*T+p)*E:(b*T+p+1)*E]...)
				}
				o := gb.ReadF32(gb.Mamba2(gb.FromF32(col, B, 1, E), wg, convS, ssmS, s))
				for b := 0; b < B; b++ {
					copy(outS[(b*T+p)*D:(b*T+p+1)*D], o[b*D:(b+1)*D])
				}
			}
			name := fmt.Sprintf("Di%d N%d G%d T%d prefill %d", s.DInner, s.DState, s.Groups, T, round+1)
			checkVals(t, name+" output", outS, outP, tol)
			checkVals(t, name+" conv state", gb.ReadF32(convS), gb.ReadF32(convP), 0)
			checkVals(t, name+" ssm state", gb.ReadF32(ssmS), gb.ReadF32(ssmP), tol)
		}
	}
}

// TestWideSplits: tc_wide's K splits cover the reduction in 32-wide
// steps, at most 8 and none shorter than 256 (but the last), and a grid
// that already fills the GPU is not split.
func TestWideSplits(t *testing.T) {
	for _, c := range []struct{ kr, m, n, want int }{
		{2048, 142, 16384, 1}, {2048, 142, 8512, 2}, {8192, 142, 2048, 8}, {2048, 142, 3072, 6}, {264, 70, 200, 1},
	} {
		s, chunk := wideSplits(c.kr, c.m, c.n, 132)
		if s != c.want || chunk%32 != 0 || s*chunk < c.kr || (s-1)*chunk >= c.kr || (s > 1 && chunk < 256) {
			t.Errorf("K %d, %d × %d: %d splits of %d, want %d", c.kr, c.m, c.n, s, chunk, c.want)
		}
	}
}

// TestMamba2Block: the fused decode mixer (in_proj with the conv epilogue,
// mamba_step_gated, out_proj with the norm on load) against the three ops
// on a copy of the same states, over three consecutive steps: the output
// agrees to rounding (the norm's sum of squares is added in another
// order), both states bit for bit, for one utterance's rows and a batch's
// (6). Shapes the fused path does not take are declined, and leave the
// states untouched.
func TestMamba2Block(t *testing.T) {
	need(t)
	if !gb.fusedMamba {
		t.Skip("the fused Mamba2 mixer is the Hopper plan's")
	}
	r := rand.New(rand.NewPCG(17, 18))
	cases := []struct {
		d  int
		s  compute.Mamba2Spec
		bs []int
	}{
		{2048, compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}, []int{2, 1, 6}}, // real hybrid
		{4096, compute.Mamba2Spec{DInner: 2048, Heads: 32, HeadDim: 64, DState: 64, Groups: 1, DConv: 3, Eps: 1e-5}, []int{2}},        // other K, d_conv
		{2048, compute.Mamba2Spec{DInner: 2048, Heads: 32, HeadDim: 64, DState: 256, Groups: 1, DConv: 4, Eps: 1e-5}, []int{2}},       // 8 state slots per lane
	}
	for _, c := range cases {
		testMamba2BlockCase(t, r, c.d, c.s, c.bs)
	}
	testMamba2BlockDeclines(t, r, cases[0].s)
}

// testMamba2BlockCase runs Mamba2Block and the three ops side by side for
// three steps of batches bs.
func testMamba2BlockCase(t *testing.T, r *rand.Rand, d int, s compute.Mamba2Spec, bs []int) {
	_, w := mambaWeights(t, r, s, compute.BF16)
	C := s.DInner + 2*s.Groups*s.DState
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	wi := randW(t, r, compute.BF16, 1/math.Sqrt(float64(d)), E, d).g
	wo := randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g
	for _, B := range bs {
		cv, sv := randVals(r, B*C*s.DConv, 1), randVals(r, B*s.Heads*s.HeadDim*s.DState, 0.5)
		conv1, conv2 := gb.FromF32(cv, B, C, s.DConv), gb.FromF32(cv, B, C, s.DConv)
		ssm1, ssm2 := gb.FromF32(sv, B, s.Heads, s.HeadDim, s.DState), gb.FromF32(sv, B, s.Heads, s.HeadDim, s.DState)
		for step := 0; step < 3; step++ {
			x := gb.FromF32(randVals(r, B*d, 1), B, 1, d)
			y1, ok := gb.Mamba2Block(x, wi, wo, w, conv1, ssm1, s)
			if !ok {
				t.Fatalf("Mamba2Block declined D%d Di%d B%d", d, s.DInner, B)
			}
			y2 := gb.Linear(gb.Mamba2(gb.Linear(x, wi, nil), w, conv2, ssm2, s), wo, nil)
			name := fmt.Sprintf("Mamba2Block D%d Di%d N%d B%d step %d", d, s.DInner, s.DState, B, step)
			checkVals(t, name, gb.ReadF32(y2), gb.ReadF32(y1), 1e-5)
			checkVals(t, name+" conv state", gb.ReadF32(conv2), gb.ReadF32(conv1), 0)
			checkVals(t, name+" ssm state", gb.ReadF32(ssm2), gb.ReadF32(ssm1), 0)
		}
	}
}

// testMamba2BlockDeclines: two positions and two norm groups are declined
// and leave the states untouched.
func testMamba2BlockDeclines(t *testing.T, r *rand.Rand, s compute.Mamba2Spec) {
	_, w := mambaWeights(t, r, s, compute.BF16)
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	C := s.DInner + 2*s.Groups*s.DState
	wi, wo := randW(t, r, compute.BF16, 0.02, E, 2048).g, randW(t, r, compute.BF16, 0.02, 2048, s.DInner).g
	conv, ssm := gb.Zeros(3, C, s.DConv), gb.Zeros(3, s.Heads, s.HeadDim, s.DState)
	for _, d := range []struct {
		name string
		x    compute.Tensor
		s    compute.Mamba2Spec
	}{
		{"2 positions", gb.FromF32(randVals(r, 2*2048, 1), 1, 2, 2048), s},
		{"2 groups", gb.FromF32(randVals(r, 2048, 1), 1, 1, 2048), compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 64, Groups: 2, DConv: 4, Eps: 1e-5}},
	} {
		if _, ok := gb.Mamba2Block(d.x, wi, wo, w, conv, ssm, d.s); ok {
			t.Errorf("Mamba2Block took %s", d.name)
		}
	}
	for _, v := range gb.ReadF32(conv) {
		if v != 0 {
			t.Fatal("a declined Mamba2Block wrote the conv state")
		}
	}
}

// TestWindow: window_cols gives the CPU's Window exactly (it only moves
// values): carried columns or lead zeros, new columns, trail zeros, and
// the tail, on the DAC's shapes (up to 1536 rows, long and short rows);
// WindowSnake gives the same window and the snake kernel's Snake of it.
func TestWindow(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(61, 62))
	for _, c := range []struct {
		b, ch, np, lead, nx, trail, keep int
	}{
		{1, 1536, 6, 0, 32, 0, 6},    // a steady push's first convolution
		{1, 96, 0, 3, 16389, 0, 6},   // a first push's late residual unit
		{1, 768, 1, 0, 36, 1, 1},     // a transposed convolution finishing
		{1, 192, 54, 0, 0, 27, 0},    // finishing with no new columns
		{2, 40, 0, 9, 5, 9, 23},      // two rows of batch, window as long as keep
		{1, 1536, 18, 0, 300, 0, 18}, // rows past 4096 blocks' worth
		{48, 1536, 6, 0, 32, 0, 6},   // 48 streams stacked: rows past the grid's 65535
	} {
		var p, x pair
		if c.np > 0 {
			v := randVals(r, c.b*c.ch*c.np, 1)
			p = pair{cb.FromF32(v, c.b, c.ch, c.np), gb.FromF32(v, c.b, c.ch, c.np)}
		}
		if c.nx > 0 {
			v := randVals(r, c.b*c.ch*c.nx, 1)
			x = pair{cb.FromF32(v, c.b, c.ch, c.nx), gb.FromF32(v, c.b, c.ch, c.nx)}
		}
		cw, ct := cb.Window(p.c, c.lead, x.c, c.trail, c.keep)
		gw, gt := gb.Window(p.g, c.lead, x.g, c.trail, c.keep)
		name := fmt.Sprintf("%+v", c)
		if !slices.Equal(cw.Shape(), gw.Shape()) {
			t.Fatalf("%s: window %v, CPU %v", name, gw.Shape(), cw.Shape())
		}
		if a, b := cb.ReadF32(cw), gb.ReadF32(gw); !slices.Equal(a, b) {
			t.Fatalf("%s: window differs from the CPU's", name)
		}
		if (ct == nil) != (gt == nil) {
			t.Fatalf("%s: tail %v, CPU's %v", name, gt != nil, ct != nil)
		}
		if ct != nil && !slices.Equal(cb.ReadF32(ct), gb.ReadF32(gt)) {
			t.Fatalf("%s: tail differs from the CPU's", name)
		}
		// WindowSnake: the same window and tail, and the snake kernel's
		// Snake of the window bit for bit.
		av := randVals(r, c.ch, 1)
		for i := range av {
			av[i] = float32(math.Abs(float64(av[i]))) + 0.05
		}
		alpha := gb.FromF32(av, c.ch)
		sw, sh, st := gb.WindowSnake(p.g, c.lead, x.g, c.trail, c.keep, alpha)
		if !slices.Equal(gb.ReadF32(sw), gb.ReadF32(gw)) || (st == nil) != (gt == nil) || (st != nil && !slices.Equal(gb.ReadF32(st), gb.ReadF32(gt))) {
			t.Fatalf("%s: WindowSnake's window or tail differs from Window's", name)
		}
		if !slices.Equal(gb.ReadF32(sh), gb.ReadF32(gb.Snake(gw, alpha))) {
			t.Fatalf("%s: WindowSnake's Snake differs from the snake kernel's", name)
		}
	}
}
