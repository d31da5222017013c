package zonos

import (
	"os"
	"path/filepath"
	"testing"

	"zonostream/internal/golden"
)

// FuzzParseConfig: arbitrary bytes never panic, and a config that is
// accepted has the sizes the model is built from inside their bounds.
func FuzzParseConfig(f *testing.F) {
	if d := golden.Dir(); d != "" {
		for _, v := range []string{"hybrid", "transformer"} {
			if b, err := os.ReadFile(filepath.Join(d, "zonos-"+v+"-tiny", "config.json")); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"backbone":{"d_model":8,"n_layer":1,"attn_cfg":{"num_heads":0,"num_heads_kv":0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		b := c.Backbone
		if b.DModel <= 0 || b.DModel > 1<<16 || b.NLayer <= 0 || b.NLayer > 1024 || !(b.NormEpsilon > 0) {
			t.Fatalf("accepted d_model %d, n_layer %d, eps %g", b.DModel, b.NLayer, b.NormEpsilon)
		}
		attn := 0
		for i := 0; i < b.NLayer; i++ {
			if c.IsAttention(i) {
				attn++
			}
		}
		if attn > 0 || c.Variant() == Transformer {
			a := b.AttnCfg
			if a.NumHeads <= 0 || a.NumHeadsKV <= 0 || b.DModel%a.NumHeads != 0 || a.NumHeads%a.NumHeadsKV != 0 {
				t.Fatalf("accepted %d attention layers with heads %d/%d, d_model %d", attn, a.NumHeads, a.NumHeadsKV, b.DModel)
			}
		}
		for _, cc := range c.PrefixConditioner.Conditioners {
			if lo, hi := cc.bounds(); !(hi > lo) {
				t.Fatalf("conditioner %s accepted with bounds [%g, %g]", cc.Name, lo, hi)
			}
			if cc.inputDim() < 1 {
				t.Fatalf("conditioner %s input dim %d", cc.Name, cc.inputDim())
			}
		}
	})
}
