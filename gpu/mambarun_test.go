//go:build cuda

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"zonostream/engine/compute"
)

// needRun skips a test where mamba_run does not serve the real hybrid's
// Mamba2 blocks (no GPU, or not Hopper), and returns their spec.
func needRun(t *testing.T) compute.Mamba2Spec {
	t.Helper()
	need(t)
	s := compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}
	if !gb.runFits(s, 2048, 2) {
		t.Skip("mamba_run needs sm_90")
	}
	return s
}

// TestMamba2Run: the persistent run of Mamba2 blocks (mamba_run) against
// the same blocks one by one (AddLayerNorm, then Mamba2Block: a batch's
// decode step) on copies of the same states, over three consecutive
// steps: outputs, residual stream and both states are the same bits, so
// an utterance adopted into a batch goes on exactly as it would have
// alone. Runs of 1, 3 (the hybrid's) and 9 blocks (two launches), with
// and without an incoming residual and a norm bias, for one and two rows.
func TestMamba2Run(t *testing.T) {
	s := needRun(t)
	r := rand.New(rand.NewPCG(41, 42))
	const d = 2048
	C := s.DInner + 2*s.DState
	E := 2*s.DInner + 2*s.DState + s.Heads
	type blockW struct {
		nw, nb, wi, wo compute.Tensor
		w              compute.Mamba2Weights
	}
	var ws []blockW
	for i := 0; i < 9; i++ {
		_, w := mambaWeights(t, r, s, compute.BF16)
		bw := blockW{
			nw: randW(t, r, compute.F32, 1, d).g,
			wi: randW(t, r, compute.BF16, 1/math.Sqrt(d), E, d).g,
			wo: randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g,
			w:  w,
		}
		if i%2 == 0 {
			bw.nb = randW(t, r, compute.F32, 0.2, d).g
		}
		ws = append(ws, bw)
	}
	for _, c := range []struct {
		L, B     int
		residual bool
	}{{3, 2, true}, {3, 2, false}, {1, 2, true}, {9, 2, true}, {3, 1, true}, {9, 1, false}} {
		var convs, ssms [2][]compute.Tensor
		for i := 0; i < c.L; i++ {
			cv, sv := randVals(r, c.B*C*s.DConv, 1), randVals(r, c.B*s.Heads*s.HeadDim*s.DState, 0.5)
			for k := range 2 {
				convs[k] = append(convs[k], gb.FromF32(cv, c.B, C, s.DConv))
				ssms[k] = append(ssms[k], gb.FromF32(sv, c.B, s.Heads, s.HeadDim, s.DState))
			}
		}
		blocks := make([]compute.Mamba2RunBlock, c.L)
		for i := range blocks {
			blocks[i] = compute.Mamba2RunBlock{NormW: ws[i].nw, NormB: ws[i].nb, InProj: ws[i].wi, OutProj: ws[i].wo,
				W: ws[i].w, ConvState: convs[0][i], SSMState: ssms[0][i], Spec: s}
		}
		for step := 0; step < 3; step++ {
			h := gb.FromF32(randVals(r, c.B*d, 1), c.B, 1, d)
			var res compute.Tensor
			if c.residual {
				res = gb.FromF32(randVals(r, c.B*d, 1), c.B, 1, d)
			}
			h1, r1, ok := gb.Mamba2Run(h, res, blocks, 1e-5)
			if !ok {
				t.Fatalf("Mamba2Run declined %+v", c)
			}
			h2, r2 := h, res
			for i := 0; i < c.L; i++ {
				x, rr := gb.AddLayerNorm(h2, r2, ws[i].nw, ws[i].nb, 1e-5)
				y, ok := gb.Mamba2Block(x, ws[i].wi, ws[i].wo, ws[i].w, convs[1][i], ssms[1][i], s)
				if !ok {
					t.Fatal("Mamba2Block declined")
				}
				h2, r2 = y, rr
			}
			name := fmt.Sprintf("Mamba2Run L%d B%d residual %v step %d", c.L, c.B, c.residual, step)
			sameBits(t, name+" hidden", gb.ReadF32(h2), gb.ReadF32(h1))
			sameBits(t, name+" residual", gb.ReadF32(r2), gb.ReadF32(r1))
			for i := 0; i < c.L; i++ {
				sameBits(t, fmt.Sprintf("%s layer %d conv state", name, i), gb.ReadF32(convs[1][i]), gb.ReadF32(convs[0][i]))
				sameBits(t, fmt.Sprintf("%s layer %d ssm state", name, i), gb.ReadF32(ssms[1][i]), gb.ReadF32(ssms[0][i]))
			}
			if t.Failed() {
				return
			}
		}
	}
	// Declined: three rows, two positions, another model width.
	conv, ssm := gb.Zeros(3, C, s.DConv), gb.Zeros(3, s.Heads, s.HeadDim, s.DState)
	bl := []compute.Mamba2RunBlock{{NormW: ws[0].nw, InProj: ws[0].wi, OutProj: ws[0].wo, W: ws[0].w, ConvState: conv, SSMState: ssm, Spec: s}}
	for _, x := range []compute.Tensor{gb.FromF32(randVals(r, 3*d, 1), 3, 1, d), gb.FromF32(randVals(r, 2*d, 1), 1, 2, d),
		gb.FromF32(randVals(r, 2*1024, 1), 2, 1, 1024)} {
		if _, _, ok := gb.Mamba2Run(x, nil, bl, 1e-5); ok {
			t.Errorf("Mamba2Run took hidden %v", x.Shape())
		}
	}
}

// TestMamba2RunTrace (figures, not a gate) times a hybrid run of three
// Mamba2 blocks as mamba_run and as the blocks one by one, each replayed
// from a recorded graph of 20 runs (GPU events), and logs where a
// mamba_run's time goes from its blocks' global-timer stamps: when the
// blocks became resident, and each phase's end and barrier, as the
// earliest, median and latest block (µs from the earliest start); and
// checks the grid barriers in the kernel: no block passes one before
// every block has reached it.
func TestMamba2RunTrace(t *testing.T) {
	s := needRun(t)
	r := rand.New(rand.NewPCG(43, 44))
	const d, L, B, reps = 2048, 3, 2, 20
	C, E := s.DInner+2*s.DState, 2*s.DInner+2*s.DState+s.Heads
	blocks := make([]compute.Mamba2RunBlock, L)
	for i := range blocks {
		_, w := mambaWeights(t, r, s, compute.BF16)
		blocks[i] = compute.Mamba2RunBlock{NormW: randW(t, r, compute.F32, 1, d).g, NormB: randW(t, r, compute.F32, 0.2, d).g,
			InProj: randW(t, r, compute.BF16, 1/math.Sqrt(d), E, d).g, OutProj: randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g,
			W: w, ConvState: gb.Zeros(B, C, s.DConv), SSMState: gb.Zeros(B, s.Heads, s.HeadDim, s.DState), Spec: s}
	}
	h := gb.FromF32(randVals(r, B*d, 1), B, 1, d)
	res := gb.FromF32(randVals(r, B*d, 1), B, 1, d)
	byRun := func() {
		for i := 0; i < reps; i++ {
			gb.Mamba2Run(h, res, blocks, 1e-5)
		}
	}
	oneByOne := func() {
		for i := 0; i < reps; i++ {
			hh, rr := compute.Tensor(h), compute.Tensor(res)
			for _, bl := range blocks {
				x, r2 := gb.AddLayerNorm(hh, rr, bl.NormW, bl.NormB, 1e-5)
				hh, _ = gb.Mamba2Block(x, bl.InProj, bl.OutProj, bl.W, bl.ConvState, bl.SSMState, s)
				rr = r2
			}
		}
	}
	weights := float64(L) * 2 * float64(E*d+d*s.DInner)
	for _, c := range []struct {
		name string
		fn   func()
	}{{"mamba_run", byRun}, {"one by one", oneByOne}, {"mamba_run", byRun}, {"one by one", oneByOne}} {
		g, err := gb.Capture(c.fn)
		if err != nil {
			t.Fatal(err)
		}
		_ = g.Launch()
		d := gb.Time(func() { _ = g.Launch() })
		g.Destroy()
		per := d.Seconds() / reps
		t.Logf("3 Mamba2 blocks, %-10s: %.1f µs a run (%.0f GB/s of weights)", c.name, per*1e6, weights/per/1e9)
	}
	t.Logf("trace: %d blocks, %d stages, in flight %d, in flight past the ring %d", gb.runGrid(), runRing, runInflight, runInflight2)
	trace := gb.Zeros(gb.sms*runStamps, 2) // uint64 stamps
	gb.runTrace = cast(trace).ptr()
	gb.Mamba2Run(h, res, blocks, 1e-5)
	gb.runTrace = 0
	raw := gb.readRaw(cast(trace))
	stamp := func(blk, i int) float64 {
		return float64(binary.LittleEndian.Uint64(raw[8*(blk*runStamps+i):]))
	}
	t0 := math.Inf(1)
	for blk := 0; blk < gb.runGrid(); blk++ {
		t0 = math.Min(t0, stamp(blk, 0))
	}
	names := []string{"block start (resident)", "consumers' wait returned"}
	for l := 0; l < L; l++ {
		for _, n := range []string{"norm done", "in_proj done", "barrier 1", "scan done", "barrier 2", "out_proj done", "barrier 3"} {
			names = append(names, fmt.Sprintf("layer %d %s", l, n))
		}
	}
	for i, n := range names {
		v := make([]float64, gb.runGrid())
		for blk := range v {
			v[blk] = (stamp(blk, i) - t0) / 1e3
		}
		slices.Sort(v)
		if i == len(names)-1 {
			break // no barrier after the last block
		}
		t.Logf("%-28s earliest %7.2f  median %7.2f  latest %7.2f µs", n, v[0], v[len(v)/2], v[len(v)-1])
	}
	// The ring probes (slots 24 + 4l): stages already landed as in_proj
	// and out_proj begin, and when in_proj's landed stages and its last
	// stage were done, from the block's own norm-done stamp.
	med := func(v []float64) string {
		slices.Sort(v)
		return fmt.Sprintf("min %5.2f  median %5.2f  max %5.2f", v[0], v[len(v)/2], v[len(v)-1])
	}
	for l := 0; l < L; l++ {
		p, normDone := 24+4*l, 2+7*l
		var readyIn, readyOut, tReady, tLast []float64
		for blk := 0; blk < gb.runGrid(); blk++ {
			readyIn = append(readyIn, stamp(blk, p))
			readyOut = append(readyOut, stamp(blk, p+3))
			if stamp(blk, p+1) > 0 {
				tReady = append(tReady, (stamp(blk, p+1)-stamp(blk, normDone))/1e3)
			}
			tLast = append(tLast, (stamp(blk, p+2)-stamp(blk, normDone))/1e3)
		}
		t.Logf("layer %d ring: stages landed as in_proj begins %s; as out_proj begins %s", l, med(readyIn), med(readyOut))
		if len(tReady) > 0 {
			t.Logf("layer %d in_proj: its landed stages done after %s µs (%d blocks had some)", l, med(tReady), len(tReady))
		}
		t.Logf("layer %d in_proj: its last stage done after %s µs", l, med(tLast))
	}
	// Layer 1's in_proj stage by stage (slots 36 + s, ns from norm done)
	// and its SM cycles (slot 46) against its time.
	{
		var cyc, ns []float64
		per := make([][]float64, 9)
		for blk := 0; blk < gb.runGrid(); blk++ {
			nd := stamp(blk, 2+7)
			for s := 0; s < 9; s++ {
				if v := stamp(blk, 36+s); v > 0 {
					per[s] = append(per[s], (v-nd)/1e3)
				}
			}
			cyc = append(cyc, stamp(blk, 46))
			ns = append(ns, stamp(blk, 24+4+2)-nd)
		}
		for s := range per {
			if len(per[s]) > 0 {
				t.Logf("layer 1 in_proj stage %d done after %s µs", s, med(per[s]))
			}
		}
		slices.Sort(cyc)
		slices.Sort(ns)
		ghz := cyc[len(cyc)/2] / ns[len(ns)/2]
		t.Logf("layer 1 in_proj: median %.0f SM cycles over %.0f ns (%.2f GHz)", cyc[len(cyc)/2], ns[len(ns)/2], ghz)
		// Layer 1's clock probes (thread 0's SM clock, precise within a
		// block): each step's median over the blocks from the layer's
		// start and from the probe before.
		probes := []struct {
			slot int
			name string
		}{{23, "layer 1 starts"}, {47, "norm: hidden rows loaded"}, {48, "norm: statistics summed"}, {45, "norm: done"},
			{49, "barrier 1: consumers arrived"}, {50, "barrier 1: release through"}, {51, "barrier 1: poll sees all"},
			{52, "scan: operands loaded"}, {53, "scan: state in registers"}, {54, "scan: updated and summed"},
			{55, "scan: state stores issued"}, {56, "scan: y stored, squares summed"}, {57, "barrier 2: poll sees all"},
			{58, "out_proj: activation normalised"}, {59, "out_proj: stages done"}, {60, "barrier 3: poll sees all"}}
		for i, p := range probes[1:] {
			var from0, step []float64
			for blk := 0; blk < gb.runGrid(); blk++ {
				v, v0, vp := stamp(blk, p.slot), stamp(blk, 23), stamp(blk, probes[i].slot)
				if v == 0 || v0 == 0 || vp == 0 {
					continue
				}
				from0 = append(from0, (v-v0)/ghz/1e3)
				step = append(step, (v-vp)/ghz/1e3)
			}
			if len(from0) > 0 {
				slices.Sort(from0)
				t.Logf("layer 1 clock: %-32s %6.2f µs from its start, %s µs after the probe before", p.name, from0[len(from0)/2], med(step))
			}
		}
	}
	// The barriers hold: no block's stamp after a barrier is earlier than
	// any block's stamp before it (the global timer is one clock; a block
	// stamps, then arrives, and stamps again once every block arrived).
	for i, n := range names[:len(names)-1] {
		if !strings.Contains(n, "barrier") {
			continue
		}
		before, after := math.Inf(-1), math.Inf(1)
		for blk := 0; blk < gb.runGrid(); blk++ {
			if stamp(blk, i) == 0 {
				t.Fatalf("block %d never stamped %q", blk, n)
			}
			before, after = math.Max(before, stamp(blk, i-1)), math.Min(after, stamp(blk, i))
		}
		if after < before {
			// Logged, not failed: the blocks' global timers may disagree
			// by more than this (the direct check below decides).
			var early []string
			for blk := 0; blk < gb.runGrid(); blk++ {
				if stamp(blk, i) < before {
					early = append(early, fmt.Sprintf("%d (SM %.0f)", blk, stamp(blk, runStamps-2)))
				}
			}
			t.Logf("%s: by the timers %d blocks went on up to %.0f ns before the last block arrived, among them %v", n, len(early), before-after, early[:min(8, len(early))])
		}
	}
	// The direct check: after each barrier every block found every block's
	// mark of having arrived (the kernel's mr_check).
	for blk := 0; blk < gb.runGrid(); blk++ {
		if bad := binary.LittleEndian.Uint64(raw[8*(blk*runStamps+runStamps-1):]); bad != 0 {
			t.Errorf("block %d went on through a barrier %d times before a block had arrived", blk, bad)
		}
	}
}
