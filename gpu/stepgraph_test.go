//go:build cuda

package gpu

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"zonostream/engine/sample"
	"zonostream/engine/zonos"
	"zonostream/internal/golden"
)

// TestStepGraphMatchesEager: generation with the decode step replayed as a
// recorded graph gives exactly the tokens of the same generation op by op
// (GenerateOptions.EagerSteps), over utterances of different lengths,
// sampler knobs (repetition window, greedy, no penalty, and the whole-
// history window that rules graphs out) and guidance scales, so the
// state pool's reuse and re-recording are covered too.
func TestStepGraphMatchesEager(t *testing.T) {
	need(t)
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
