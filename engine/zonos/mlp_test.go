package zonos_test

import (
	"encoding/json"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/zonos"
	"zonostream/internal/randmodel"
)

// TestMLPSizes: mamba_ssm rounds a gated MLP's hidden size up to a
// multiple of 128 and builds none for size 0 (also giving Mamba2 layers an
// MLP when d_intermediate > 0); Zonos' transformer block keeps an exact
// size, and size 0 adds nothing. Each such config binds its own random
// checkpoint and runs a prefill and a step.
func TestMLPSizes(t *testing.T) {
	for _, c := range []struct {
		name            string
		variant         zonos.Variant
		attnMLP, ssmMLP int
		fc1Rows         int // of layer 0's MLP, 0 when absent
	}{
		{"hybrid rounded", zonos.Hybrid, 200, 0, 2 * 256},
		{"hybrid no attention MLP", zonos.Hybrid, 0, 0, 0},
		{"hybrid Mamba2 MLP", zonos.Hybrid, 128, 100, 2 * 128},
		{"transformer exact", zonos.Transformer, 200, 0, 2 * 200},
		{"transformer zero", zonos.Transformer, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := zonos.RealConfig(c.variant)
			cfg.Backbone.DModel, cfg.Backbone.NLayer = 128, 2
			cfg.Backbone.AttnCfg.NumHeads, cfg.Backbone.AttnCfg.NumHeadsKV, cfg.Backbone.AttnCfg.RotaryEmbDim = 4, 2, 32
			cfg.Backbone.AttnLayerIdx = []int{0}
			if c.variant == zonos.Transformer {
				cfg.Backbone.AttnLayerIdx = []int{0, 1}
			}
			cfg.Backbone.AttnMLPDIntermediat, cfg.Backbone.DIntermediate = c.attnMLP, c.ssmMLP
			js, _ := json.Marshal(cfg)
			cfg, err := zonos.ParseConfig(js)
			if err != nil {
				t.Fatal(err)
			}
			f, err := randmodel.Zonos(cfg, 3)
			if err != nil {
				t.Fatal(err)
			}
			m, err := zonos.New(cpu.New(1), cfg, f)
			if err != nil {
				t.Fatal(err)
			}
			if rows := m.MLPRows(0); rows != c.fc1Rows {
				t.Fatalf("layer 0 fc1 rows %d, want %d", rows, c.fc1Rows)
			}
			if c.ssmMLP > 0 && m.MLPRows(1) == 0 {
				t.Fatal("Mamba2 layer without its MLP")
			}
			p, _, err := m.Prefix(zonos.Inputs{PhonemeIDs: []int32{2, 40, 41, 3}})
			if err != nil {
				t.Fatal(err)
			}
			st := m.NewState(p.Shape()[1] + 3)
			if _, err := m.Prefill(st, p, [][zonos.NumCodebooks]int32{maskColumn}, 2, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Step(st, [zonos.NumCodebooks]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
