//go:build cuda

package gpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"zonostream/engine/compute"
	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestStepGraphMatchesEager: generation with the decode step replayed as a
// recorded graph gives exactly the tokens of the same generation op by op
// (GenerateOptions.EagerSteps), over utterances of different lengths,
// sampler knobs (repetition window, greedy, no penalty, and the whole-
// history window that rules graphs out) and guidance scales, so the
// state pool's reuse and re-recording are covered too; under each plan.
func TestStepGraphMatchesEager(t *testing.T) { forEachPlan(t, testStepGraphMatchesEager) }

func testStepGraphMatchesEager(t *testing.T) {
	for _, pack := range []string{"zonos-hybrid-tiny", "zonos-transformer-tiny"} {
		t.Run(pack, func(t *testing.T) {
			p := golden.Pack(t, pack)
			m, err := zonos.Load(gb, filepath.Join(p, "config.json"), filepath.Join(p, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			greedy := sample.Defaults()
			greedy.Temperature = 0
			noPen := sample.Defaults()
			noPen.RepetitionPenalty = 1
			whole := sample.Defaults()
			whole.RepetitionWindow = 0
			cases := []struct {
				name   string
				sp     sample.Params
				cfg    float32
				frames int
				ids    int
			}{
				{"defaults", sample.Defaults(), 2, 40, 20},
				{"defaults-longer", sample.Defaults(), 2, 70, 31},
				{"greedy", greedy, 2, 30, 12},
				{"no-penalty-cfg3", noPen, 3, 50, 25},
				{"whole-history", whole, 2, 20, 15},
				{"defaults-again", sample.Defaults(), 2, 40, 20},
			}
			for i, c := range cases {
				ids := make([]int32, c.ids)
				ids[0], ids[c.ids-1] = 2, 3
				for j := 1; j < c.ids-1; j++ {
					ids[j] = int32(4 + (j*29+i)%60)
				}
				in := zonos.Inputs{PhonemeIDs: ids, Values: map[string][]float32{"language_id": {24}}}
				run := func(eager bool) *zonos.Result {
					o := zonos.GenerateOptions{MaxNewTokens: c.frames, CFGScale: c.cfg, Sampling: c.sp, Seed: uint64(100 + i), EagerSteps: eager}
					res, err := m.Generate(context.Background(), in, o, nil)
					if err != nil {
						t.Fatalf("%s (eager %v): %v", c.name, eager, err)
					}
					return res
				}
				g, e := run(false), run(true)
				if !slices.Equal(g.Codes, e.Codes) || !slices.Equal(g.Delayed, e.Delayed) || g.EOS != e.EOS {
					t.Errorf("%s: graph and eager generation differ: %d vs %d frames (EOS %v vs %v)", c.name, len(g.Codes), len(e.Codes), g.EOS, e.EOS)
				} else {
					t.Logf("%s: %d frames identical (EOS %v)", c.name, len(g.Codes), g.EOS)
				}
			}
		})
	}
}

// TestAttentionDevicePosition: attention with the position on the device
// (compute.Positions.Dev, one position for every row, as a recorded step
// reads it) equals the CPU's with the same position from the host, after
// a prefill and eager steps have filled the caches.
func TestAttentionDevicePosition(t *testing.T) {
	need(t)
	r := rand.New(rand.NewPCG(41, 42))
	a := compute.AttentionSpec{Heads: 8, KVHeads: 2, HeadDim: 64, RotaryDim: 32, Rotary: compute.RotaryHalves, RotaryBase: 10000}
	const B, maxT = 2, 64
	w := (a.Heads + 2*a.KVHeads) * a.HeadDim
	kc := pair{cb.Zeros(B, maxT, a.KVHeads, a.HeadDim), gb.Zeros(B, maxT, a.KVHeads, a.HeadDim)}
	vc := pair{cb.Zeros(B, maxT, a.KVHeads, a.HeadDim), gb.Zeros(B, maxT, a.KVHeads, a.HeadDim)}
	pos := 0
	for i, T := range []int{20, 1, 1, 1} {
		qkv := randF32(r, 1, B, T, w)
		oc := cb.Attention(qkv.c, kc.c, vc.c, compute.Positions{Start: pos}, a)
		at := compute.Positions{Start: pos}
		if i == 3 {
			at = compute.Positions{Dev: gb.FromI32([]int32{int32(pos)}, 1)}
		}
		og := gb.Attention(qkv.g, kc.g, vc.g, at, a)
		name := fmt.Sprintf("Attention pos %d T %d device position %v", pos, T, at.Dev != nil)
		check(t, name, pair{oc, og}, tol)
		check(t, name+" k cache", kc, tol)
		check(t, name+" v cache", vc, 0)
		pos += T
	}
}
