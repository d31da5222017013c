package zonos

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"zonostream/engine/weights"
)

// realConditioners is the prefix conditioner list of both Zyphra
// checkpoints (the golden tiny packs copy it).
const realConditioners = `[
 {"type": "EspeakPhonemeConditioner", "name": "espeak"},
 {"cond_dim": 128, "uncond_type": "learned", "projection": "linear", "type": "PassthroughConditioner", "name": "speaker"},
 {"input_dim": 8, "uncond_type": "learned", "type": "FourierConditioner", "name": "emotion"},
 {"min_val": 0, "max_val": 24000, "uncond_type": "learned", "type": "FourierConditioner", "name": "fmax"},
 {"min_val": 0, "max_val": 400, "uncond_type": "learned", "type": "FourierConditioner", "name": "pitch_std"},
 {"min_val": 0, "max_val": 40, "uncond_type": "learned", "type": "FourierConditioner", "name": "speaking_rate"},
 {"min_val": -1, "max_val": 126, "uncond_type": "learned", "type": "IntegerConditioner", "name": "language_id"},
 {"input_dim": 8, "min_val": 0.5, "max_val": 0.8, "uncond_type": "learned", "type": "FourierConditioner", "name": "vqscore_8"},
 {"min_val": -1.0, "max_val": 1000, "uncond_type": "learned", "type": "FourierConditioner", "name": "ctc_loss"},
 {"min_val": 1, "max_val": 5, "uncond_type": "learned", "type": "FourierConditioner", "name": "dnsmos_ovrl"},
 {"min_val": 0, "max_val": 1, "uncond_type": "learned", "type": "IntegerConditioner", "name": "speaker_noised"}]`

// RealConfig returns the configuration of Zyphra's released checkpoints
// (Zonos-v0.1-hybrid: 46 layers, attention at every 4th; -transformer: 26
// attention layers), for benchmarks on randomly initialised models of the
// real shapes.
func RealConfig(v Variant) *Config {
	layers, attn, ssm := 46, "[0,4,8,12,16,20,24,28,32,36,40,44]", `{"layer": "Mamba2"}`
	if v == Transformer {
		idx := make([]string, 26)
		for i := range idx {
			idx[i] = fmt.Sprint(i)
		}
		layers, attn, ssm = 26, "["+strings.Join(idx, ",")+"]", "{}"
	}
	js := fmt.Sprintf(`{"backbone": {"d_model": 2048, "d_intermediate": 0, "attn_mlp_d_intermediate": 8192,
 "n_layer": %d, "ssm_cfg": %s, "attn_layer_idx": %s,
 "attn_cfg": {"causal": true, "num_heads": 16, "num_heads_kv": 4, "rotary_emb_dim": 128, "qkv_proj_bias": false, "out_proj_bias": false},
 "rms_norm": false, "residual_in_fp32": false, "norm_epsilon": 1e-05},
 "prefix_conditioner": {"conditioners": %s, "projection": "linear"},
 "eos_token_id": 1024, "masked_token_id": 1025, "pad_vocab_to_multiple_of": 8}`, layers, ssm, attn, realConditioners)
	c, err := ParseConfig([]byte(js))
	if err != nil {
		panic("zonos: built-in real config is invalid: " + err.Error())
	}
	return c
}

// ConfigJSON renders a config back to JSON.
func (c *Config) JSON() ([]byte, error) { return json.MarshalIndent(c, "", "  ") }

// RandomWeights makes a checkpoint of cfg's exact shapes with random bf16
// values scaled so activations stay finite through every layer
// (uniform ±√(3/fan_in) for projections, unit norms, Mamba2 A and dt in
// their usual ranges). It is for benchmarks and tests only.
func RandomWeights(cfg *Config, seed uint64) (*weights.File, error) {
	g := &rng{s: seed*0x9E3779B97F4A7C15 + 1}
	var ts []*weights.Tensor
	add := func(name string, fill func(i int) float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(data[2*i:], uint16(math.Float32bits(fill(i))>>16))
		}
		ts = append(ts, &weights.Tensor{Name: name, DType: weights.BF16, Shape: shape, Data: data})
	}
	uniform := func(a float32) func(int) float32 { return func(int) float32 { return a * (2*g.float() - 1) } }
	lin := func(name string, out, in int) { add(name, uniform(float32(math.Sqrt(3/float64(in)))), out, in) }
	ones := func(int) float32 { return 1 }
	zeros := func(int) float32 { return 0 }
	d := cfg.Backbone.DModel
	for i, cc := range cfg.PrefixConditioner.Conditioners {
		p := fmt.Sprintf("prefix_conditioner.conditioners.%d.", i)
		if cc.UncondType == "learned" {
			add(p+"uncond_vector", uniform(0.5), d)
		}
		switch cc.Type {
		case "EspeakPhonemeConditioner":
			add(p+"phoneme_embedder.weight", uniform(1), 189, d)
		case "FourierConditioner":
			add(p+"weight", uniform(1), d/2, cc.inputDim())
		case "IntegerConditioner":
			lo, hi := cc.bounds()
			add(p+"int_embedder.weight", uniform(1), int(hi-lo)+1, d)
		}
		if cc.Projection == "linear" {
			in := d
			if cc.CondDim > 0 {
				in = cc.CondDim
			}
			lin(p+"project.weight", d, in)
			add(p+"project.bias", zeros, d)
		}
	}
	if cfg.PrefixConditioner.Projection == "linear" {
		lin("prefix_conditioner.project.weight", d, d)
		add("prefix_conditioner.project.bias", zeros, d)
	}
	add("prefix_conditioner.norm.weight", ones, d)
	add("prefix_conditioner.norm.bias", zeros, d)
	for k := 0; k < NumCodebooks; k++ {
		add(fmt.Sprintf("embeddings.%d.weight", k), uniform(1), embedRows, d)
		lin(fmt.Sprintf("heads.%d.weight", k), LogitWidth-1, d)
	}
	b := cfg.Backbone
	for i := 0; i < b.NLayer; i++ {
		p := fmt.Sprintf("backbone.layers.%d.", i)
		add(p+"norm.weight", ones, d)
		add(p+"norm.bias", zeros, d)
		if cfg.IsAttention(i) {
			a := b.AttnCfg
			hd := d / a.NumHeads
			lin(p+"mixer.in_proj.weight", (a.NumHeads+2*a.NumHeadsKV)*hd, d)
			lin(p+"mixer.out_proj.weight", d, a.NumHeads*hd)
			if m := mlpHidden(cfg, b.AttnMLPDIntermediat); m > 0 || cfg.Variant() == Transformer {
				add(p+"norm2.weight", ones, d)
				add(p+"norm2.bias", zeros, d)
				add(p+"mlp.fc1.weight", uniform(float32(math.Sqrt(3/float64(d)))), 2*m, d)
				add(p+"mlp.fc2.weight", uniform(float32(math.Sqrt(3/float64(max(m, 1))))), d, m)
			}
			continue
		}
		di := mambaExpand * d
		h := di / mambaHeadDim
		conv := di + 2*mambaGroups*mambaDState
		lin(p+"mixer.in_proj.weight", 2*di+2*mambaGroups*mambaDState+h, d)
		lin(p+"mixer.out_proj.weight", d, di)
		add(p+"mixer.conv1d.weight", uniform(0.5), conv, 1, mambaDConv)
		add(p+"mixer.conv1d.bias", zeros, conv)
		// dt in [1e-3, 1e-1] through softplus⁻¹, A = −exp(A_log) in [−16, −1].
		add(p+"mixer.dt_bias", func(int) float32 {
			dt := math.Exp(math.Log(1e-3) + g.float64()*(math.Log(1e-1)-math.Log(1e-3)))
			return float32(dt + math.Log(-math.Expm1(-dt)))
		}, h)
		add(p+"mixer.A_log", func(int) float32 { return float32(math.Log(1 + 15*g.float64())) }, h)
		add(p+"mixer.D", ones, h)
		add(p+"mixer.norm.weight", ones, di)
		if m := mlpHidden(cfg, b.DIntermediate); m > 0 {
			add(p+"norm2.weight", ones, d)
			add(p+"norm2.bias", zeros, d)
			lin(p+"mlp.fc1.weight", 2*m, d)
			lin(p+"mlp.fc2.weight", d, m)
		}
	}
	add("backbone.norm_f.weight", ones, d)
	add("backbone.norm_f.bias", zeros, d)
	img, err := weights.Encode(ts, map[string]string{"format": "pt", "origin": "zonos-stream random init"})
	if err != nil {
		return nil, err
	}
	return weights.Parse("random-"+string(cfg.Variant()), img)
}

// rng is a small xorshift generator (splitmix-seeded); fast enough to fill
// 1.6 B weights in seconds.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}

func (r *rng) float() float32   { return float32(r.next()>>40) / (1 << 24) }
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }

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
