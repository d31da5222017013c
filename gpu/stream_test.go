//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"zonostream/engine/compute"
)

// streamStats reads a stream tensor's statistics ([rows][mean, variance]).
func streamStats(t *testing.T, x compute.Tensor, rows int) [][2]float64 {
	t.Helper()
	st := cast(x).stats
	if st == nil {
		t.Fatal("the stream has no statistics")
	}
	raw := gb.ReadF32(st)
	out := make([][2]float64, rows)
	for m := range out {
		for j := 0; j < 2; j++ {
			lo, hi := math.Float32bits(raw[4*m+2*j]), math.Float32bits(raw[4*m+2*j+1])
			out[m][j] = math.Float64frombits(uint64(hi)<<32 | uint64(lo))
		}
	}
	return out
}

// TestResidualStream: LinearAdd equals Linear then Add bit for bit, its row
// statistics are the sum's mean and variance, and AddNormLinear on its
// output agrees with LayerNorm then Linear, for one and two rows and every
// K of the chunk GEMV (rows with a mean far from zero included). Shapes
// and streams it does not take are declined.
func TestResidualStream(t *testing.T) {
	need(t)
	if !gb.hopper || gemvChunkOff || lnFoldOff {
		t.Skip("the residual stream ops need sm_90 and the chunk GEMV")
	}
	r := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct{ k, d, n, m int }{
		{4096, 2048, 8512, 2}, // Mamba2 out_proj, then the next in_proj
		{2048, 2048, 8192, 2}, // attention out_proj, then fc1 (two halves)
		{8192, 2048, 2560, 1}, // fc2, then a qkv
		{2048, 4096, 2048, 2}, // d_model 4096
	} {
		name := fmt.Sprintf("K%d D%d N%d M%d", c.k, c.d, c.n, c.m)
		x := gb.FromF32(randVals(r, c.m*c.k, 1), c.m, 1, c.k)
		w := randW(t, r, compute.BF16, 1/math.Sqrt(float64(c.k)), c.d, c.k).g
		rv := randVals(r, c.m*c.d, 1)
		for i := c.d / 2; i < c.d; i++ {
			rv[i] += 100 // row 0 far from zero mean
		}
		res := gb.FromF32(rv, c.m, 1, c.d)
		sum, ok := gb.LinearAdd(x, w, res)
		if !ok {
			t.Fatalf("%s: LinearAdd declined", name)
		}
		ref := gb.ReadF32(gb.Add(gb.Linear(x, w, nil), res))
		checkVals(t, name+" LinearAdd", ref, gb.ReadF32(sum), 0)
		st := streamStats(t, sum, c.m)
		for m := 0; m < c.m; m++ {
			var s1, s2 float64
			row := ref[m*c.d : (m+1)*c.d]
			for _, v := range row {
				s1 += float64(v)
			}
			mean := s1 / float64(c.d)
			for _, v := range row {
				s2 += (float64(v) - mean) * (float64(v) - mean)
			}
			vr := s2 / float64(c.d)
			if math.Abs(st[m][0]-mean) > 1e-9*math.Max(1, math.Abs(mean)) || math.Abs(st[m][1]-vr) > 1e-9*math.Max(vr, mean*mean) {
				t.Errorf("%s row %d: statistics %v, want mean %v variance %v", name, m, st[m], mean, vr)
			}
		}
		w2 := randW(t, r, compute.BF16, 1/math.Sqrt(float64(c.d)), c.n, c.d).g
		lnw, lnb := randW(t, r, compute.F32, 1, c.d).g, randW(t, r, compute.F32, 0.5, c.d).g
		for _, bias := range []compute.Tensor{lnb, nil} {
			pre := compute.Norm{W: lnw, B: bias, Eps: 1e-5}
			y, s2, ok := gb.AddNormLinear(sum, nil, pre, w2)
			if !ok || s2 != sum {
				t.Fatalf("%s: AddNormLinear declined (or returned another stream)", name)
			}
			want := gb.Linear(gb.LayerNorm(sum, lnw, bias, 1e-5), w2, nil)
			checkVals(t, fmt.Sprintf("%s AddNormLinear (bias %v)", name, bias != nil), gb.ReadF32(want), gb.ReadF32(y), 2e-5)
		}
	}
	// Declined: a stream without statistics, a residual given, three rows.
	w := randW(t, r, compute.BF16, 0.02, 2048, 2048).g
	lnw := randW(t, r, compute.F32, 1, 2048).g
	pre := compute.Norm{W: lnw, Eps: 1e-5}
	plain := gb.FromF32(randVals(r, 2*2048, 1), 2, 1, 2048)
	if _, _, ok := gb.AddNormLinear(plain, nil, pre, w); ok {
		t.Error("AddNormLinear took a stream without statistics")
	}
	sum, _ := gb.LinearAdd(plain, w, plain)
	if _, _, ok := gb.AddNormLinear(sum, plain, pre, w); ok {
		t.Error("AddNormLinear took a residual")
	}
	three := gb.FromF32(randVals(r, 3*2048, 1), 3, 1, 2048)
	if _, ok := gb.LinearAdd(three, w, three); ok {
		t.Error("LinearAdd took three rows")
	}
}

// TestTicketsReset: after many LinearAdds (each electing its last block
// with a counter), every counter of the lane is back at zero.
func TestTicketsReset(t *testing.T) {
	need(t)
	if !gb.hopper || gemvChunkOff || lnFoldOff {
		t.Skip("the residual stream ops need sm_90 and the chunk GEMV")
	}
	r := rand.New(rand.NewPCG(33, 34))
	x := gb.FromF32(randVals(r, 2*4096, 1), 2, 1, 4096)
	w := randW(t, r, compute.BF16, 0.02, 2048, 4096).g
	res := gb.FromF32(randVals(r, 2*2048, 1), 2, 1, 2048)
	for i := 0; i < 300; i++ {
		if _, ok := gb.LinearAdd(x, w, res); !ok {
			t.Fatal("LinearAdd declined")
		}
	}
	var raw []byte
	gb.do(func() {
		tk := &tensor{shape: []int{ticketSlots}, dt: compute.I32, h: &handle{st: &storage{ptr: gb.tickets}}}
		raw = gb.readOnOwner(tk)
	})
	for i := 0; i < len(raw); i += 4 {
		if raw[i]|raw[i+1]|raw[i+2]|raw[i+3] != 0 {
			t.Fatalf("ticket %d is %v after its launches", i/4, raw[i:i+4])
		}
	}
}

// TestMamba2Stream: Mamba2Stream over three steps against AddLayerNorm,
// Mamba2Block and Add on copies of the same states: the first step from a
// stream without statistics (with and without a residual), the next from
// its own output.
func TestMamba2Stream(t *testing.T) {
	need(t)
	if !gb.hopper || gemvChunkOff || lnFoldOff || mambaBlockOff {
		t.Skip("the residual stream ops need sm_90 and the chunk GEMV")
	}
	r := rand.New(rand.NewPCG(35, 36))
	s := compute.Mamba2Spec{DInner: 4096, Heads: 64, HeadDim: 64, DState: 128, Groups: 1, DConv: 4, Eps: 1e-5}
	const d = 2048
	_, w := mambaWeights(t, r, s, compute.BF16)
	C := s.DInner + 2*s.Groups*s.DState
	E := 2*s.DInner + 2*s.Groups*s.DState + s.Heads
	wi := randW(t, r, compute.BF16, 1/math.Sqrt(d), E, d).g
	wo := randW(t, r, compute.BF16, 1/math.Sqrt(float64(s.DInner)), d, s.DInner).g
	pre := compute.Norm{W: randW(t, r, compute.F32, 1, d).g, B: randW(t, r, compute.F32, 0.2, d).g, Eps: 1e-5}
	for _, B := range []int{2, 1} {
		for _, withRes := range []bool{false, true} {
			cv, sv := randVals(r, B*C*s.DConv, 1), randVals(r, B*s.Heads*s.HeadDim*s.DState, 0.5)
			conv1, conv2 := gb.FromF32(cv, B, C, s.DConv), gb.FromF32(cv, B, C, s.DConv)
			ssm1, ssm2 := gb.FromF32(sv, B, s.Heads, s.HeadDim, s.DState), gb.FromF32(sv, B, s.Heads, s.HeadDim, s.DState)
			hidden := gb.FromF32(randVals(r, B*d, 1), B, 1, d)
			var residual compute.Tensor
			if withRes {
				residual = gb.FromF32(randVals(r, B*d, 1), B, 1, d)
			}
			h1, r1 := hidden, residual
			h2, r2 := hidden, residual
			for step := 0; step < 3; step++ {
				out, ok := gb.Mamba2Stream(h1, r1, pre, wi, wo, w, conv1, ssm1, s)
				if !ok {
					t.Fatalf("Mamba2Stream declined B%d step %d", B, step)
				}
				x, sum := gb.AddLayerNorm(h2, r2, pre.W, pre.B, pre.Eps)
				y, ok := gb.Mamba2Block(x, wi, wo, w, conv2, ssm2, s)
				if !ok {
					t.Fatal("Mamba2Block declined")
				}
				want := gb.Add(y, sum)
				name := fmt.Sprintf("Mamba2Stream B%d residual %v step %d", B, withRes, step)
				checkVals(t, name, gb.ReadF32(want), gb.ReadF32(out), 2e-5)
				checkVals(t, name+" ssm state", gb.ReadF32(ssm2), gb.ReadF32(ssm1), 1e-5)
				checkVals(t, name+" conv state", gb.ReadF32(conv2), gb.ReadF32(conv1), 1e-5)
				if cast(out).stats == nil {
					t.Fatalf("%s: no statistics", name)
				}
				h1, r1 = out, nil
				h2, r2 = want, nil
			}
		}
	}
}
