package randmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"zonostream/engine/compute/cpu"
	"zonostream/engine/dac"
	"zonostream/engine/speaker"
	"zonostream/engine/zonos"
)

// smallZonos is the real configuration of variant v narrowed to two layers
// of width 128.
func smallZonos(t *testing.T, v zonos.Variant) *zonos.Config {
	cfg := zonos.RealConfig(v)
	cfg.Backbone.DModel, cfg.Backbone.NLayer = 128, 2
	cfg.Backbone.AttnCfg.NumHeads, cfg.Backbone.AttnCfg.NumHeadsKV, cfg.Backbone.AttnCfg.RotaryEmbDim = 4, 2, 32
	cfg.Backbone.AttnLayerIdx = []int{0}
	if v == zonos.Transformer {
		cfg.Backbone.AttnLayerIdx = []int{0, 1}
	}
	js, _ := json.Marshal(cfg)
	cfg, err := zonos.ParseConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestZonos: the checkpoint binds, is the same for the same seed and
// another for another seed, and keeps the norms at one.
func TestZonos(t *testing.T) {
	for _, v := range []zonos.Variant{zonos.Hybrid, zonos.Transformer} {
		cfg := smallZonos(t, v)
		a, err := Zonos(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zonos.New(cpu.New(1), cfg, a); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		b, _ := Zonos(cfg, 1)
		c, _ := Zonos(cfg, 2)
		name := "backbone.layers.0.mixer.in_proj.weight"
		ta, _ := a.Tensor(name)
		tb, _ := b.Tensor(name)
		tc, _ := c.Tensor(name)
		if !bytes.Equal(ta.Data, tb.Data) || bytes.Equal(ta.Data, tc.Data) {
			t.Errorf("%s: %s does not follow the seed", v, name)
		}
		norm, _ := a.Tensor("backbone.norm_f.weight")
		if got, _ := norm.Float32s(); got[0] != 1 {
			t.Errorf("%s: final norm weight %g, want 1", v, got[0])
		}
	}
}

// TestDAC: the checkpoint holds exactly dac.TensorShapes and binds.
func TestDAC(t *testing.T) {
	cfg := dac.Dac44kHz()
	cfg.EncoderHiddenSize, cfg.DecoderHiddenSize, cfg.HiddenSize = 4, 64, 32
	src, err := DAC(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	shapes, _ := dac.TensorShapes(cfg)
	if len(src.Names()) != len(shapes) {
		t.Errorf("%d tensors, dac.TensorShapes lists %d", len(src.Names()), len(shapes))
	}
	if _, err := dac.New(cfg, src, cpu.New(1)); err != nil {
		t.Fatal(err)
	}
}

// TestSpeaker: the model has the geometry asked for and embeds a clip to
// finite vectors, the same for the same seed.
func TestSpeaker(t *testing.T) {
	clip := make([]float32, speaker.SampleRate)
	for i := range clip {
		clip[i] = float32(0.3 * math.Sin(float64(i)*0.05))
	}
	blocks := [4]int{1, 2, 1, 1}
	var first []float32
	for range 2 {
		m := Speaker(cpu.New(1), 8, blocks, 3)
		if m.Config.InPlanes != 8 || m.Config.Blocks != blocks || m.Config.Embed != 256 || m.Config.LDA != 128 {
			t.Fatalf("config %+v", m.Config)
		}
		v, err := m.Embed(context.Background(), clip)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatal("non-finite embedding")
			}
		}
		if first == nil {
			first = v
		} else if !slices.Equal(first, v) {
			t.Error("two models of the same seed embed differently")
		}
	}
}
