//go:build cuda

package gpu

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"zonostream/engine/compute"
	"zonostream/engine/zonos"
	"zonostream/internal/randmodel"
)

// hybridOnly leaves TestZonosRealShape's transformer variant out.
var hybridOnly = flag.Bool("hybrid-only", false, "TestZonosRealShape: the hybrid backbone only")

// TestZonosRealShape runs a randomly initialised Zonos of the real shapes
// (zonos.RealConfig + randmodel.Zonos, 1.65 B bf16 parameters for the
// hybrid) on the CPU and, under each plan, on the GPU: prefill of an
// 80-position prompt and 16 teacher-forced decode steps, CFG batch 2.
// Gates: per step, cosine ≥ 0.9999 and top-1 agreement ≥ 99 %
// per codebook. The transformer variant runs too unless
// -hybrid-only is passed.
func TestZonosRealShape(t *testing.T) {
	need(t)
	if testing.Short() {
		t.Skip("full-size models in -short")
	}
	variants := []zonos.Variant{zonos.Hybrid, zonos.Transformer}
	if *hybridOnly {
		variants = variants[:1]
	}
	for _, v := range variants {
		t.Run(string(v), func(t *testing.T) { zonosRealShape(t, v) })
	}
}

// zonosRealShape computes variant v's reference on the CPU once, then
// compares each plan's GPU run with it.
func zonosRealShape(t *testing.T, v zonos.Variant) {
	cfg := zonos.RealConfig(v)
	f, err := randmodel.Zonos(cfg, 11)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := zonos.New(cb, cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, 78)
	ids[0], ids[len(ids)-1] = 2, 3
	for i := 1; i < len(ids)-1; i++ {
		ids[i] = int32(4 + (i*37)%180)
	}
	in := zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {24}}}
	pc, _, err := mc.Prefix(in)
	if err != nil {
		t.Fatal(err)
	}
	prefix := cb.ReadF32(pc)
	mask := [zonos.NumCodebooks]int32{}
	for k := range mask {
		mask[k] = zonos.MASK
	}
	const steps = 16
	r := rand.New(rand.NewPCG(31, 32))
	cols := make([][zonos.NumCodebooks]int32, steps)
	for s := range cols {
		for k := range cols[s] {
			cols[s][k] = int32(r.IntN(1024))
		}
	}
	sc := mc.NewState(128)
	lc, err := mc.Prefill(sc, pc, [][zonos.NumCodebooks]int32{mask}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := [][]float32{lc} // the prefill's logits, then each step's
	for _, col := range cols {
		l, err := mc.Step(sc, col, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref = append(ref, l)
	}
	var wbytes int64
	for _, n := range f.Names() {
		if tt, err := f.Tensor(n); err == nil {
			wbytes += int64(len(tt.Data))
		}
	}
	forEachPlan(t, func(t *testing.T) {
		mg, err := zonos.New(gb, cfg, f)
		if err != nil {
			t.Fatal(err)
		}
		pg, _, err := mg.Prefix(in)
		if err != nil {
			t.Fatal(err)
		}
		checkVals(t, string(v)+" prefix", prefix, gb.ReadF32(pg), 1e-4)
		sg := mg.NewState(128)
		start := time.Now()
		lg, err := mg.Prefill(sg, pg, [][zonos.NumCodebooks]int32{mask}, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		prefillTime := time.Since(start)
		compareLogits(t, fmt.Sprintf("%s prefill (%d positions)", v, len(ids)+1), ref[0], lg)
		var gpuTime time.Duration
		for s, col := range cols {
			start := time.Now()
			lg, err = mg.Step(sg, col, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			gpuTime += time.Since(start)
			compareLogits(t, fmt.Sprintf("%s step %d", v, s+1), ref[s+1], lg)
		}
		per := gpuTime.Seconds() / steps
		t.Logf("%s on the GPU, eager per-op: prefill %.1f ms, decode step %.2f ms incl. logits read-back; checkpoint %.2f GB → %.0f GB/s effective",
			v, prefillTime.Seconds()*1e3, per*1e3, float64(wbytes)/1e9, float64(wbytes)/per/1e9)
	})
}

// compareLogits checks CFG logits [9·1026]: cosine over finite entries,
// max |Δ|, and top-1 agreement per codebook.
func compareLogits(t *testing.T, name string, ref, got []float32) {
	t.Helper()
	if len(ref) != len(got) {
		t.Fatalf("%s: %d logits, want %d", name, len(got), len(ref))
	}
	var rf, gf []float32
	for i := range ref {
		ri, gi := float64(ref[i]), float64(got[i])
		if math.IsInf(ri, 0) || math.IsInf(gi, 0) {
			if ri != gi {
				t.Errorf("%s: logit %d is %v, want %v", name, i, gi, ri)
			}
			continue
		}
		rf, gf = append(rf, ref[i]), append(gf, got[i])
	}
	maxd, maxr, cos := diff(rf, gf)
	w := len(ref) / zonos.NumCodebooks
	agree := 0
	for k := 0; k < zonos.NumCodebooks; k++ {
		if argmax(ref[k*w:(k+1)*w]) == argmax(got[k*w:(k+1)*w]) {
			agree++
		}
	}
	t.Logf("%-34s max|Δ| %.3g max|ref| %.3g cos %.9f top-1 %d/%d", name, maxd, maxr, cos, agree, zonos.NumCodebooks)
	if !(cos >= 0.9999) || agree < zonos.NumCodebooks {
		t.Errorf("%s: cos %.9f, top-1 agreement %d/%d", name, cos, agree, zonos.NumCodebooks)
	}
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

var _ compute.Backend = (*Backend)(nil)
