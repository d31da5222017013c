package zonos

import (
	"fmt"
	"strings"

	"zonostream/engine/weights"
)

// phonemeRows is the phoneme table's height in Zyphra's checkpoints (and
// the golden packs): engine/text's symbol set. The loader takes the
// height a checkpoint stores.
const phonemeRows = 189

// TensorShape is one tensor of a checkpoint: its name and shape.
type TensorShape struct {
	Name  string
	Shape []int
}

// TensorShapes lists every tensor a checkpoint of cfg holds, with the
// shape New binds it at: the conditioners in order, the prefix projection
// and norm, each codebook's embedding and head, the layers, the final
// norm. It is the checkpoint's layout as this package reads it, for tools
// that write checkpoints (converters, randomly initialised models of the
// real shapes for benchmarks) or check one before loading it; the order
// is fixed, so a writer that fills tensors from one random stream in this
// order makes the same checkpoint every time.
func TensorShapes(cfg *Config) []TensorShape {
	var ts []TensorShape
	add := func(name string, shape ...int) { ts = append(ts, TensorShape{name, shape}) }
	d := cfg.Backbone.DModel
	for i, cc := range cfg.PrefixConditioner.Conditioners {
		p := fmt.Sprintf("prefix_conditioner.conditioners.%d.", i)
		if cc.UncondType == "learned" {
			add(p+"uncond_vector", d)
		}
		switch cc.Type {
		case "EspeakPhonemeConditioner":
			add(p+"phoneme_embedder.weight", phonemeRows, d)
		case "FourierConditioner":
			add(p+"weight", d/2, cc.inputDim())
		case "IntegerConditioner":
			lo, hi := cc.bounds()
			add(p+"int_embedder.weight", int(hi-lo)+1, d)
		}
		if cc.Projection == "linear" {
			in := d
			if cc.CondDim > 0 {
				in = cc.CondDim
			}
			add(p+"project.weight", d, in)
			add(p+"project.bias", d)
		}
	}
	if cfg.PrefixConditioner.Projection == "linear" {
		add("prefix_conditioner.project.weight", d, d)
		add("prefix_conditioner.project.bias", d)
	}
	add("prefix_conditioner.norm.weight", d)
	add("prefix_conditioner.norm.bias", d)
	for k := 0; k < NumCodebooks; k++ {
		add(fmt.Sprintf("embeddings.%d.weight", k), embedRows, d)
		add(fmt.Sprintf("heads.%d.weight", k), LogitWidth-1, d)
	}
	b := cfg.Backbone
	for i := 0; i < b.NLayer; i++ {
		p := fmt.Sprintf("backbone.layers.%d.", i)
		add(p+"norm.weight", d)
		add(p+"norm.bias", d)
		if cfg.IsAttention(i) {
			a := b.AttnCfg
			hd := d / a.NumHeads
			add(p+"mixer.in_proj.weight", (a.NumHeads+2*a.NumHeadsKV)*hd, d)
			add(p+"mixer.out_proj.weight", d, a.NumHeads*hd)
			if m := mlpHidden(cfg, b.AttnMLPDIntermediat); m > 0 || cfg.Variant() == Transformer {
				add(p+"norm2.weight", d)
				add(p+"norm2.bias", d)
				add(p+"mlp.fc1.weight", 2*m, d)
				add(p+"mlp.fc2.weight", d, m)
			}
			continue
		}
		di := mambaExpand * d
		h := di / mambaHeadDim
		conv := di + 2*mambaGroups*mambaDState
		add(p+"mixer.in_proj.weight", 2*di+2*mambaGroups*mambaDState+h, d)
		add(p+"mixer.out_proj.weight", d, di)
		add(p+"mixer.conv1d.weight", conv, 1, mambaDConv)
		add(p+"mixer.conv1d.bias", conv)
		add(p+"mixer.dt_bias", h)
		add(p+"mixer.A_log", h)
		add(p+"mixer.D", h)
		add(p+"mixer.norm.weight", di)
		if m := mlpHidden(cfg, b.DIntermediate); m > 0 {
			add(p+"norm2.weight", d)
			add(p+"norm2.bias", d)
			add(p+"mlp.fc1.weight", 2*m, d)
			add(p+"mlp.fc2.weight", d, m)
		}
	}
	add("backbone.norm_f.weight", d)
	add("backbone.norm_f.bias", d)
	return ts
}

// StepBytes counts the weight bytes one decode step reads: every backbone
// tensor and the nine heads (the embeddings contribute nine rows and the
// conditioner nothing).
func StepBytes(f *weights.File) int64 {
	var n int64
	for _, name := range f.Names() {
		if strings.HasPrefix(name, "backbone.") || strings.HasPrefix(name, "heads.") {
			t, _ := f.Tensor(name)
			n += int64(len(t.Data))
		}
	}
	return n
}
