package zonos

import (
	"encoding/json"
	"testing"

	"zonostream/engine/cpu"
)

// TestMLPSizes: mamba_ssm rounds a gated MLP's hidden size up to a
// multiple of 128 and builds none for size 0 (also giving Mamba2 layers an
// MLP when d_intermediate > 0); Zonos' transformer block keeps an exact
// size, and size 0 adds nothing. Each such config binds its own random
// checkpoint and runs a prefill and a step.
func TestMLPSizes(t *testing.T) {
	for _, c := range []struct {
		name            string
		variant         Variant
		attnMLP, ssmMLP int
		fc1Rows         int // of layer 0's MLP, 0 when absent
	}{
		{"hybrid rounded", Hybrid, 200, 0, 2 * 256},
		{"hybrid no attention MLP", Hybrid, 0, 0, 0},
		{"hybrid Mamba2 MLP", Hybrid, 128, 100, 2 * 128},
		{"transformer exact", Transformer, 200, 0, 2 * 200},
		{"transformer zero", Transformer, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := RealConfig(c.variant)
			cfg.Backbone.DModel, cfg.Backbone.NLayer = 128, 2
			cfg.Backbone.AttnCfg.NumHeads, cfg.Backbone.AttnCfg.NumHeadsKV, cfg.Backbone.AttnCfg.RotaryEmbDim = 4, 2, 32
			cfg.Backbone.AttnLayerIdx = []int{0}
			if c.variant == Transformer {
				cfg.Backbone.AttnLayerIdx = []int{0, 1}
			}
			cfg.Backbone.AttnMLPDIntermediat, cfg.Backbone.DIntermediate = c.attnMLP, c.ssmMLP
			js, _ := json.Marshal(cfg)
			cfg, err := ParseConfig(js)
			if err != nil {
				t.Fatal(err)
			}
			f, err := RandomWeights(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(cpu.New(1), cfg, f)
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			if mlp := m.layers[0].mlp; mlp != nil {
				rows = mlp.fc1.Shape()[0]
			}
			if rows != c.fc1Rows {
				t.Fatalf("layer 0 fc1 rows %d, want %d", rows, c.fc1Rows)
			}
			if c.ssmMLP > 0 && m.layers[1].mlp == nil {
				t.Fatal("Mamba2 layer without its MLP")
			}
			p, _, err := m.Prefix(Inputs{PhonemeIDs: []int32{2, 40, 41, 3}})
			if err != nil {
				t.Fatal(err)
			}
			st := m.NewState(p.Shape()[1] + 3)
			if _, err := m.Prefill(st, p, [][NumCodebooks]int32{maskColumn}, 2, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Step(st, [NumCodebooks]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
